import Ferry
import Foundation

/// The `OutputStream` ``MCSession/startStream(withName:toPeer:)`` returns: bytes written go to
/// a buffer of ``capacity`` bytes, which a task sends over a Ferry stream in order.
///
/// `write` blocks while the buffer is full and returns -1 once the stream failed (the peer left
/// or cancelled it: ``streamError`` says why). `close()` returns at once; what was written is
/// still sent, then the stream ends at the peer. Scheduled in a run loop, the delegate hears
/// `openCompleted`, `hasSpaceAvailable` and `errorOccurred`. Thread-safe.
final class FerryOutputStream: OutputStream {
  /// Bytes buffered before `write` blocks.
  static let capacity = 1 << 20
  /// The most bytes sent in one Ferry write.
  static let chunkSize = 256 << 10

  private let session: Session
  private let name: String
  private let peer: PeerID
  private let events = StreamEvents()
  private let condition = NSCondition()
  private let wake: AsyncStream<Void>.Continuation
  private let wakes: AsyncStream<Void>
  // Guarded by `condition`:
  private var buffer: [UInt8] = []
  private var status: Stream.Status = .notOpen
  private var failure: MCError?
  private var closed = false

  init(session: Session, name: String, peer: PeerID) {
    self.session = session
    self.name = name
    self.peer = peer
    (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    super.init(toMemory: ())
  }

  deinit {
    wake.finish()
  }

  required init(toMemory: ()) {
    preconditionFailure("FerryOutputStream is made by MCSession.startStream(withName:toPeer:)")
  }

  override var streamStatus: Stream.Status {
    condition.withLock { status }
  }

  override var streamError: (any Error)? {
    condition.withLock { failure }
  }

  override var delegate: (any StreamDelegate)? {
    get { events.delegate }
    set { events.delegate = newValue }
  }

  override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
    events.schedule(in: aRunLoop)
  }

  override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
    events.remove(from: aRunLoop)
  }

  override func open() {
    let opening = condition.withLock {
      guard status == .notOpen else { return false }
      status = .open
      return true
    }
    guard opening else { return }
    events.emit(.openCompleted, from: self)
    events.emit(.hasSpaceAvailable, from: self)
    let (session, name, peer, wakes) = (session, name, peer, wakes)
    // Holds the stream weakly: one released without close() ends at the peer all the same.
    let weakSelf = WeakReference(self)
    Task {
      do {
        let writer = try await session.startStream(named: name, to: peer)
        for await _ in wakes {
          guard let stream = weakSelf.object else { break }
          while let chunk = stream.take() {
            try await writer.write(chunk)
            stream.freed()
          }
          if stream.isDrained { break }
        }
        try await writer.finish()
      } catch let error as TransferError {
        weakSelf.object?.failed(MCError(error))
      } catch {
        weakSelf.object?.failed(MCError(.unknown, "\(error)"))
      }
    }
  }

  /// Closed, and everything written was sent.
  private var isDrained: Bool {
    condition.withLock { closed && buffer.isEmpty }
  }

  override var hasSpaceAvailable: Bool {
    condition.withLock { status == .open && buffer.count < Self.capacity }
  }

  override func write(_ bytes: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
    guard length > 0 else { return 0 }
    condition.lock()
    defer { condition.unlock() }
    while status == .open && buffer.count >= Self.capacity {
      condition.wait()
    }
    guard status == .open else { return -1 }
    let count = min(length, Self.capacity - buffer.count)
    buffer.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
    wake.yield()
    return count
  }

  override func close() {
    condition.withLock {
      if status == .open || status == .notOpen { status = .closed }
      closed = true
      condition.broadcast()
    }
    wake.yield()
    wake.finish()
  }

  /// Up to ``chunkSize`` buffered bytes, nil when none.
  private func take() -> [UInt8]? {
    condition.withLock {
      guard !buffer.isEmpty else { return nil }
      let count = min(buffer.count, Self.chunkSize)
      let chunk = Array(buffer[..<count])
      buffer.removeFirst(count)
      return chunk
    }
  }

  /// Sent: writers waiting for space go on.
  private func freed() {
    let open = condition.withLock {
      condition.broadcast()
      return status == .open
    }
    if open { events.emit(.hasSpaceAvailable, from: self) }
  }

  /// The Ferry stream failed: writes fail from now on.
  private func failed(_ error: MCError) {
    condition.withLock {
      failure = error
      if status != .closed { status = .error }
      buffer = []
      condition.broadcast()
    }
    events.emit(.errorOccurred, from: self)
  }
}
