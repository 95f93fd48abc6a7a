import Dispatch
import NIOCore
import Synchronization

/// The digest of one file, computed on a serial queue of its own so that hashing a chunk overlaps
/// reading or writing the next one (on a 2-core machine, hashing and disk I/O on one thread was
/// the transfer's critical path). Chunks are hashed in the order given; ``finalize()`` waits
/// for them. Small files, where a queue hop would cost more than it overlaps, are hashed on the
/// caller's thread (``init(continuing:size:on:)`` decides).
///
/// At most ``maximumBacklog`` bytes wait to be hashed: ``update(_:)`` then waits until the queue
/// catches up — blocking its caller (the receiver's own dispatch queue; never an event loop), or,
/// from async code (the sender's task), suspending it.
final class BackgroundHasher: @unchecked Sendable {
  /// Bytes handed over but not hashed yet before ``update(_:)`` waits.
  static let maximumBacklog = 4 << 20

  /// Files with fewer bytes left to hash than this are hashed inline.
  static let backgroundThreshold: UInt64 = 1 << 20

  private let queue: DispatchQueue?
  private let backlog = Atomic<Int>(0)
  // Confined to `queue` (or to the caller, inline).
  private var hasher: ContentHasher

  /// Continues `hasher` (which may already cover a file's first bytes) for `size` more bytes:
  /// on `queue` when there are enough of them to be worth it, inline otherwise.
  init(_ hasher: ContentHasher, size: UInt64, on queue: DispatchQueue) {
    self.hasher = hasher
    self.queue = size >= Self.backgroundThreshold ? queue : nil
  }

  /// Hashes `bytes` after the bytes given before.
  func update(_ bytes: ByteBuffer) {
    guard let queue else { return hashInline(bytes) }
    if reserve(bytes.readableBytes) { queue.sync {} }
    enqueue(bytes, on: queue)
  }

  /// The digest of everything given, once it is all hashed.
  func finalize() -> [UInt8] {
    guard let queue else { return hasher.finalize() }
    return queue.sync { hasher.finalize() }
  }

  /// ``update(_:)`` for async callers: waits for the backlog without blocking the thread (a
  /// task must never block one of the few cooperative-pool threads).
  func update(_ bytes: ByteBuffer) async {
    guard let queue else { return hashInline(bytes) }
    if reserve(bytes.readableBytes) {
      await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
    enqueue(bytes, on: queue)
  }

  /// Hashes `count` zeros (a hole) after the bytes given before.
  func updateZeros(_ count: UInt64) {
    var left = count
    while left > 0 {
      let piece = Int(min(left, UInt64(Self.zeros.readableBytes)))
      update(Self.zeros.getSlice(at: 0, length: piece)!)
      left -= UInt64(piece)
    }
  }

  /// ``updateZeros(_:)`` for async callers.
  func updateZeros(_ count: UInt64) async {
    var left = count
    while left > 0 {
      let piece = Int(min(left, UInt64(Self.zeros.readableBytes)))
      await update(Self.zeros.getSlice(at: 0, length: piece)!)
      left -= UInt64(piece)
    }
  }

  /// A megabyte of zeros, shared by every hole.
  private static let zeros = ByteBuffer(repeating: 0, count: 1 << 20)

  /// ``finalize()`` for async callers: waits for the queue without blocking the thread.
  func finalize() async -> [UInt8] {
    guard let queue else { return hasher.finalize() }
    return await withCheckedContinuation { continuation in
      queue.async { continuation.resume(returning: self.hasher.finalize()) }
    }
  }

  private func hashInline(_ bytes: ByteBuffer) {
    bytes.withUnsafeReadableBytes { hasher.update($0) }
  }

  /// Counts `count` more bytes waiting; true when the caller must first wait for the queue.
  private func reserve(_ count: Int) -> Bool {
    backlog.add(count, ordering: .relaxed).newValue > Self.maximumBacklog
  }

  private func enqueue(_ bytes: ByteBuffer, on queue: DispatchQueue) {
    let count = bytes.readableBytes
    queue.async {
      bytes.withUnsafeReadableBytes { self.hasher.update($0) }
      self.backlog.subtract(count, ordering: .relaxed)
    }
  }
}
