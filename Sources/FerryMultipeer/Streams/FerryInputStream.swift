import Ferry
import Foundation

/// The `InputStream` a session's delegate receives for a peer's stream: after `open()`, a task
/// reads the Ferry stream into a buffer of ``capacity`` bytes, and `read` takes from it.
///
/// `read` blocks until bytes arrive, returns 0 at the end of the stream and -1 once it failed
/// (``streamError`` says why). While the buffer is full, nothing more is read from the peer,
/// whose writes then wait: a slow reader slows the writer down. `close()` before the end
/// cancels the stream at the peer. Scheduled in a run loop, the delegate hears
/// `openCompleted`, `hasBytesAvailable` (again after a read that leaves bytes, as with Apple's
/// streams, so a delegate may read one piece an event), `endEncountered` (once everything
/// buffered was read) and `errorOccurred`; nothing after `close()`. Thread-safe.
final class FerryInputStream: InputStream {
  /// Bytes buffered before the task stops reading from the peer.
  static let capacity = 1 << 20

  private let incoming: IncomingStream
  private let events = StreamEvents()
  private let condition = NSCondition()
  private let space: AsyncStream<Void>.Continuation
  private let spaces: AsyncStream<Void>
  // Guarded by `condition`:
  private var buffer: [UInt8] = []
  private var head = 0
  private var status: Stream.Status = .notOpen
  private var ended = false
  private var failure: MCError?
  /// `endEncountered` was emitted (or is not to be: closed).
  private var endReported = false

  init(_ incoming: IncomingStream) {
    self.incoming = incoming
    (spaces, space) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    super.init(data: Data())
  }

  deinit {
    space.finish()
    incoming.cancel(reason: "the stream was released")
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
    events.schedule(in: aRunLoop, forMode: mode)
  }

  override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
    events.remove(from: aRunLoop, forMode: mode)
  }

  override func getBuffer(
    _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
    length len: UnsafeMutablePointer<Int>
  ) -> Bool {
    false
  }

  override func open() {
    let opening = condition.withLock {
      guard status == .notOpen else { return false }
      status = .open
      return true
    }
    guard opening else { return }
    events.emit(.openCompleted, from: self)
    let (chunks, spaces) = (incoming.chunks, spaces)
    // Holds the stream weakly: one released unread is cancelled (deinit) and the task ends.
    let weakSelf = WeakReference(self)
    Task {
      var waits = spaces.makeAsyncIterator()
      do {
        for try await chunk in chunks {
          guard let stream = weakSelf.object else { return }
          while !stream.accept(chunk) {
            guard await waits.next() != nil else { return }
          }
          stream.events.emit(.hasBytesAvailable, from: stream)
        }
        weakSelf.object?.finished(nil)
      } catch let error as TransferError {
        weakSelf.object?.finished(MCError(error))
      } catch {
        weakSelf.object?.finished(MCError(.unknown, "\(error)"))
      }
    }
  }

  /// Appends `chunk` if the buffer has room (or is empty); false when it must wait for a read.
  private func accept(_ chunk: [UInt8]) -> Bool {
    condition.withLock {
      if status == .closed { return true }  // closed by the reader: dropped
      guard buffered == 0 || buffered + chunk.count <= Self.capacity else { return false }
      if head > 0 {
        buffer.removeFirst(head)
        head = 0
      }
      buffer.append(contentsOf: chunk)
      condition.broadcast()
      return true
    }
  }

  /// The end of the stream (`error` nil) or its failure.
  private func finished(_ error: MCError?) {
    let event = condition.withLock { () -> Stream.Event? in
      // The status changes once the reader has taken what is buffered.
      ended = true
      failure = error
      condition.broadcast()
      guard status == .open else { return nil }  // closed by the reader: no more events
      if error != nil { return .errorOccurred }
      return takeEndReport() ? .endEncountered : nil  // else by the read that empties it
    }
    if let event { events.emit(event, from: self) }
  }

  /// Whether `endEncountered` is due now (ended cleanly, everything read) and not yet emitted;
  /// marks it emitted. Under `condition`.
  private func takeEndReport() -> Bool {
    guard ended && failure == nil && buffered == 0 && !endReported else { return false }
    endReported = true
    return true
  }

  /// Bytes buffered and not read. Under `condition`.
  private var buffered: Int { buffer.count - head }

  override var hasBytesAvailable: Bool {
    condition.withLock { status == .open && (buffered > 0 || ended) }
  }

  override func read(_ target: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
    guard length > 0 else { return 0 }
    condition.lock()
    while status == .open && buffered == 0 && !ended {
      condition.wait()
    }
    guard status == .open else {
      condition.unlock()
      return status == .atEnd ? 0 : -1
    }
    if buffered == 0 {  // ended, and everything read
      let end = takeEndReport()
      status = failure == nil ? .atEnd : .error
      condition.unlock()
      if end { events.emit(.endEncountered, from: self) }
      return failure == nil ? 0 : -1
    }
    let count = min(length, buffered)
    buffer.withUnsafeBufferPointer { source in
      target.update(from: source.baseAddress! + head, count: count)
    }
    head += count
    // The delegate hears of what is left, or of the end once nothing is.
    var next: Stream.Event?
    if takeEndReport() {
      next = .endEncountered
    } else if buffered > 0 {
      next = .hasBytesAvailable
    }
    condition.unlock()
    space.yield()
    if let next { events.emit(next, from: self) }
    return count
  }

  override func close() {
    let cancel = condition.withLock {
      defer {
        status = .closed
        buffer = []
        head = 0
        endReported = true
        condition.broadcast()
      }
      return !ended
    }
    events.removeAll()
    space.yield()
    if cancel { incoming.cancel(reason: "closed by the reader") }
  }
}
