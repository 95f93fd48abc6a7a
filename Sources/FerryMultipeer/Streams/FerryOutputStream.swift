import Ferry
import Foundation

/// The `OutputStream` ``MCSession/startStream(withName:toPeer:)`` returns: bytes written go to
/// an ``OutputBuffer`` of 1 MiB, which a task sends over a Ferry stream in order.
///
/// `write` blocks while the buffer is full and returns -1 once the stream failed (the peer left
/// or cancelled it: ``streamError`` says why) or was closed. `close()` returns at once; what
/// was written is still sent, then the stream ends at the peer — also when the stream is
/// released without `close()`. Scheduled in a run loop, the delegate hears `openCompleted`,
/// `hasSpaceAvailable` and `errorOccurred`, and nothing after `close()`. Thread-safe.
final class FerryOutputStream: OutputStream {
  private let session: Session
  private let name: String
  private let peer: PeerID
  private let events = StreamEvents()
  private let output = OutputBuffer()

  init(session: Session, name: String, peer: PeerID) {
    self.session = session
    self.name = name
    self.peer = peer
    super.init(toMemory: ())
  }

  deinit {
    output.close()
  }

  required init(toMemory: ()) {
    preconditionFailure("FerryOutputStream is made by MCSession.startStream(withName:toPeer:)")
  }

  override var streamStatus: Stream.Status { output.streamStatus }

  override var streamError: (any Error)? { output.streamError }

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

  override func open() {
    guard output.open() else { return }
    events.emit(.openCompleted, from: self)
    events.emit(.hasSpaceAvailable, from: self)
    let (session, name, peer, output, events) = (session, name, peer, output, events)
    let stream = WeakReference(self)
    // Holds the buffer, not the stream: a stream released after close() is still sent whole.
    Task {
      do {
        let writer = try await session.startStream(named: name, to: peer)
        for await _ in output.wakes {
          while let chunk = output.take() {
            try await writer.write(chunk)
            if output.sent(), let stream = stream.object {
              events.emit(.hasSpaceAvailable, from: stream)
            }
          }
          if output.isDrained { break }
        }
        try await writer.finish()
      } catch let error as TransferError {
        output.fail(MCError(error))
        if let stream = stream.object { events.emit(.errorOccurred, from: stream) }
      } catch {
        output.fail(MCError(.unknown, "\(error)"))
        if let stream = stream.object { events.emit(.errorOccurred, from: stream) }
      }
    }
  }

  override var hasSpaceAvailable: Bool { output.hasSpaceAvailable }

  override func write(_ bytes: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
    output.write(bytes, maxLength: length)
  }

  override func close() {
    output.close()
    events.removeAll()
  }
}
