import Dispatch
import Foundation
import NIOCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A streamed item's bytes (``ResourceItem/isStreamed``: a pipe, standard input), read once,
/// in order, as they come. Every system call runs on a queue of its own — a stream may keep a
/// read waiting for as long as its writer likes, which must never hold one of the few threads
/// async tasks run on — and waits in `poll(2)` in steps, so that ``stop()`` ends a read that
/// waits within a fifth of a second. Used by one task at a time.
final class StreamSource: Sendable {
  /// What a read came to.
  enum Read {
    /// The next bytes (at least one).
    case bytes(ByteBuffer)
    /// The stream ended.
    case end
    /// Nothing came for the idle time asked for (the stream is still open).
    case idle
  }

  private let url: URL
  private let queue = DispatchQueue(label: "ferry.stream-source")
  /// The descriptor, once opened (-1 before, and after ``close()``); touched on `queue` only.
  private let descriptor = Mutex<Int32>(-1)
  private let stopped = Atomic<Bool>(false)

  /// A source reading `url` (opened on the first read).
  init(url: URL) {
    self.url = url
  }

  deinit {
    let fd = descriptor.withLock { $0 }
    if fd >= 0 { Glibc.close(fd) }
  }

  /// Reads the next bytes: waits until some come (or, with `idle`, that long at most), then
  /// takes what is there at once, up to `limit` bytes.
  ///
  /// - Throws: ``TransferError/resource(_:)`` (``ResourceError/cannotRead(_:)``) when the
  ///   stream cannot be opened or read, and ``TransferError/cancelled`` once ``stop()`` was
  ///   called.
  func read(upTo limit: Int, allocator: ByteBufferAllocator, idle: Duration? = nil) async throws
    -> Read
  {
    try await withCheckedThrowingContinuation { continuation in
      queue.async {
        continuation.resume(
          with: Result { try self.readNow(upTo: limit, allocator: allocator, idle: idle) })
      }
    }
  }

  /// Ends a read that waits (any thread); reads after it fail.
  func stop() {
    stopped.store(true, ordering: .relaxed)
  }

  /// Closes the stream (after the last read).
  func close() {
    queue.async {
      self.descriptor.withLock { fd in
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
      }
    }
  }

  /// On `queue`.
  private func readNow(upTo limit: Int, allocator: ByteBufferAllocator, idle: Duration?) throws
    -> Read
  {
    let fd = try opened()
    var buffer = allocator.buffer(capacity: limit)
    var failure: Int32 = 0
    var ended = false
    // Wait for the first byte (in steps, to notice a stop), then take what is there at once.
    guard try wait(fd, forever: true, until: idle.map { .now + $0 }) else { return .idle }
    buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: limit) { pointer in
      var total = 0
      while total < limit {
        let count = Glibc.read(fd, pointer.baseAddress! + total, limit - total)
        if count < 0 {
          if errno == EINTR { continue }
          if errno == EAGAIN { break }
          failure = errno
          break
        }
        if count == 0 {
          ended = true
          break
        }
        total += count
        // More only if it is there now: a trickling writer's bytes go as they come.
        guard total < limit, (try? wait(fd, forever: false)) == true else { break }
      }
      return total
    }
    guard failure == 0 else {
      throw TransferError.resource(
        .cannotRead("\(url.path): \(String(cString: strerror(failure)))"))
    }
    if buffer.readableBytes == 0 && ended { return .end }
    return .bytes(buffer)
  }

  /// Whether `fd` has something to read (bytes or its end): waits for it when `forever`
  /// (until ``stop()``, or `deadline`), or only looks.
  private func wait(
    _ fd: Int32, forever: Bool, until deadline: ContinuousClock.Instant? = nil
  ) throws -> Bool {
    while true {
      if stopped.load(ordering: .relaxed) { throw TransferError.cancelled }
      if let deadline, ContinuousClock.now >= deadline { return false }
      var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let result = poll(&entry, 1, forever ? 200 : 0)
      if result < 0 {
        if errno == EINTR { continue }
        throw TransferError.resource(
          .cannotRead("\(url.path): \(String(cString: strerror(errno)))"))
      }
      if result > 0 { return true }
      if !forever { return false }
    }
  }

  /// The descriptor, opened on first use.
  private func opened() throws -> Int32 {
    if stopped.load(ordering: .relaxed) { throw TransferError.cancelled }
    let current = descriptor.withLock { $0 }
    if current >= 0 { return current }
    // Standard input is read where it is: opened again through /proc, a pipe whose writer has
    // already finished would wait for a writer for ever.
    let fd: Int32
    if url.path == "/dev/stdin" {
      fd = fcntl(0, F_DUPFD_CLOEXEC, 0)
    } else {
      // Without waiting for a FIFO's writer to turn up (poll(2) waits for it instead), then
      // blocking again: reads happen only once poll(2) says there is something to read.
      fd = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
      if fd >= 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
    }
    guard fd >= 0 else {
      throw TransferError.resource(
        .cannotRead("\(url.path): \(String(cString: strerror(errno)))"))
    }
    descriptor.withLock { $0 = fd }
    return fd
  }
}
