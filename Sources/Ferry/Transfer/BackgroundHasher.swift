import Crypto
import Dispatch
import NIOCore
import Synchronization

/// SHA-256 of one file, computed on a serial queue of its own so that hashing a chunk overlaps
/// reading or writing the next one (on a 2-core machine, hashing and disk I/O on one thread was
/// the transfer's critical path). Chunks are hashed in the order given; ``finalize()`` waits
/// for them. Small files, where a queue hop would cost more than it overlaps, are hashed on the
/// caller's thread (``init(continuing:size:on:)`` decides).
///
/// At most ``maximumBacklog`` bytes wait to be hashed: ``update(_:)`` blocks its caller (never
/// the event loop: callers are the transfer's own queue or task) until the queue catches up.
final class BackgroundHasher: @unchecked Sendable {
  /// Bytes handed over but not hashed yet before ``update(_:)`` waits.
  static let maximumBacklog = 4 << 20

  /// Files with fewer bytes left to hash than this are hashed inline.
  static let backgroundThreshold: UInt64 = 1 << 20

  private let queue: DispatchQueue?
  private let backlog = Atomic<Int>(0)
  // Confined to `queue` (or to the caller, inline).
  private var hasher: SHA256

  /// Continues `hasher` (which may already cover a file's first bytes) for `size` more bytes:
  /// on `queue` when there are enough of them to be worth it, inline otherwise.
  init(continuing hasher: SHA256 = SHA256(), size: UInt64, on queue: DispatchQueue) {
    self.hasher = hasher
    self.queue = size >= Self.backgroundThreshold ? queue : nil
  }

  /// Hashes `bytes` after the bytes given before.
  func update(_ bytes: ByteBuffer) {
    guard let queue else {
      bytes.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
      return
    }
    let count = bytes.readableBytes
    if backlog.add(count, ordering: .relaxed).newValue > Self.maximumBacklog {
      queue.sync {}
    }
    queue.async {
      bytes.withUnsafeReadableBytes { self.hasher.update(bufferPointer: $0) }
      self.backlog.subtract(count, ordering: .relaxed)
    }
  }

  /// The digest of everything given, once it is all hashed.
  func finalize() -> [UInt8] {
    guard let queue else { return Array(hasher.finalize()) }
    return queue.sync { Array(hasher.finalize()) }
  }
}
