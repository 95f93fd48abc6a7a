import Foundation

/// The bytes a ``FerryOutputStream`` was given and its task has not sent yet, and the stream's
/// status: shared by the stream (whose `write` blocks on it) and its task (which drains it),
/// so that the task outlives a stream released right after `close()` and still sends
/// everything. Thread-safe: all state under `condition`.
final class OutputBuffer: @unchecked Sendable {
  /// Bytes buffered before `write` blocks.
  static let capacity = 1 << 20
  /// The most bytes sent in one Ferry write.
  static let chunkSize = 256 << 10

  let wakes: AsyncStream<Void>
  private let wake: AsyncStream<Void>.Continuation
  private let condition = NSCondition()
  private var buffer: [UInt8] = []
  private var head = 0
  private var status: Stream.Status = .notOpen
  private var failure: MCError?
  private var closed = false

  init() {
    (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
  }

  var streamStatus: Stream.Status { condition.withLock { status } }
  var streamError: MCError? { condition.withLock { failure } }

  /// Opens; false when it was not `notOpen`.
  func open() -> Bool {
    condition.withLock {
      guard status == .notOpen else { return false }
      status = .open
      return true
    }
  }

  /// Room for more bytes.
  var hasSpaceAvailable: Bool {
    condition.withLock { status == .open && buffered < Self.capacity }
  }

  private var buffered: Int { buffer.count - head }

  /// Copies up to `length` bytes, waiting while the buffer is full; -1 once failed or closed.
  func write(_ bytes: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
    guard length > 0 else { return 0 }
    condition.lock()
    while status == .open && buffered >= Self.capacity {
      condition.wait()
    }
    guard status == .open else {
      condition.unlock()
      return -1
    }
    let count = min(length, Self.capacity - buffered)
    if head > 0 && head >= buffer.count / 2 {
      buffer.removeFirst(head)
      head = 0
    }
    buffer.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
    condition.unlock()
    wake.yield()
    return count
  }

  /// No more writes; what is buffered is still sent. Idempotent.
  func close() {
    condition.withLock {
      if status == .open || status == .notOpen { status = .closed }
      closed = true
      condition.broadcast()
    }
    wake.yield()
  }

  /// Up to ``chunkSize`` buffered bytes, nil when none (for the task).
  func take() -> [UInt8]? {
    condition.withLock {
      guard buffered > 0 else { return nil }
      let count = min(buffered, Self.chunkSize)
      let chunk = Array(buffer[head..<head + count])
      head += count
      if head == buffer.count {
        buffer.removeAll(keepingCapacity: true)
        head = 0
      }
      return chunk
    }
  }

  /// A chunk was sent: writers waiting for room go on. Returns whether the stream is open.
  func sent() -> Bool {
    condition.withLock {
      condition.broadcast()
      return status == .open
    }
  }

  /// Closed and everything sent.
  var isDrained: Bool {
    condition.withLock { closed && buffered == 0 }
  }

  /// The Ferry stream failed: writes fail from now on, and what was buffered is dropped.
  func fail(_ error: MCError) {
    condition.withLock {
      failure = error
      if status != .closed { status = .error }
      buffer = []
      head = 0
      condition.broadcast()
    }
    wake.finish()
  }
}
