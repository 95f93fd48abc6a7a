import Synchronization

/// Free space promised to offers being received, per filesystem: an offer is accepted only if
/// the free space not yet promised to others covers it, so two offers accepted at once cannot
/// both count on the same free bytes. Promises shrink as their bytes are written (bytes on disk
/// are already gone from the free space) and as files complete.
final class SpaceReservations: Sendable {
  static let shared = SpaceReservations()
  private let reserved = Mutex<[UInt64: UInt64]>([:])

  /// Promises `bytes` on filesystem `device`, which has `available` bytes free; false (nothing
  /// promised) when the bytes already promised leave too little.
  func reserve(_ bytes: UInt64, on device: UInt64, available: UInt64) -> Bool {
    reserved.withLock { reserved in
      let promised = reserved[device, default: 0]
      guard promised <= available, bytes <= available - promised else { return false }
      reserved[device] = promised + bytes
      return true
    }
  }

  /// Bytes promised on `device` now.
  func promised(on device: UInt64) -> UInt64 {
    reserved.withLock { $0[device, default: 0] }
  }

  /// Withdraws a promise of `bytes` on `device`.
  func release(_ bytes: UInt64, on device: UInt64) {
    guard bytes > 0 else { return }
    reserved.withLock { reserved in
      let left = reserved[device, default: 0] - min(bytes, reserved[device, default: 0])
      reserved[device] = left == 0 ? nil : left
    }
  }
}
