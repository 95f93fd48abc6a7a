import NIOCore
import OpenAPIRuntime
import Synchronization

/// A request body handed to its operation as it comes (an upload's bytes), not gathered: the
/// connection's pieces are queued up to ``window`` bytes, and reading from the connection
/// waits while the operation has not taken them. Any thread.
final class StreamedBody: Sendable {
  /// How many bytes may wait for the operation before the connection is read no more.
  static let window = 1 << 20

  private struct Waiting {
    /// Bytes queued and not yet taken (each piece's cost).
    var bytes = 0
    /// Called once the queue is half empty again, when the connection waits for it.
    var caughtUp: (@Sendable () -> Void)?
  }

  private let waiting = Mutex(Waiting())
  private let pieces: AsyncThrowingStream<(ByteBuffer, Int), any Error>
  private let continuation: AsyncThrowingStream<(ByteBuffer, Int), any Error>.Continuation

  /// An empty body, waiting for its pieces.
  init() {
    (pieces, continuation) = AsyncThrowingStream.makeStream()
  }

  /// The operation's view of it: `length` bytes, read once.
  func body(length: Int64) -> HTTPBody {
    let pieces = self.pieces.map { [self] piece, cost -> ArraySlice<UInt8> in
      taken(cost)
      return ArraySlice(piece.readableBytesView)
    }
    return HTTPBody(pieces, length: .known(length), iterationBehavior: .single)
  }

  /// A piece came, costing `cost` against the window: whether more may be read now (else
  /// `caughtUp` is called once it may).
  func feed(_ piece: ByteBuffer, cost: Int, caughtUp: @escaping @Sendable () -> Void) -> Bool {
    continuation.yield((piece, cost))
    return waiting.withLock { waiting in
      waiting.bytes += cost
      guard waiting.bytes > Self.window else { return true }
      waiting.caughtUp = caughtUp
      return false
    }
  }

  /// The body ended.
  func end() { continuation.finish() }

  /// The body was cut off (the connection closed, or it was longer than it said).
  func cut() {
    continuation.finish(throwing: CancellationError())
    release()
  }

  private func taken(_ cost: Int) {
    let resume = waiting.withLock { waiting -> (@Sendable () -> Void)? in
      waiting.bytes -= cost
      guard waiting.bytes <= Self.window / 2, let caughtUp = waiting.caughtUp else { return nil }
      waiting.caughtUp = nil
      return caughtUp
    }
    resume?()
  }

  private func release() {
    let resume = waiting.withLock { waiting -> (@Sendable () -> Void)? in
      defer { waiting.caughtUp = nil }
      return waiting.caughtUp
    }
    resume?()
  }
}
