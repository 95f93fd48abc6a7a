import NIOCore

/// The sending side of one channel: the credit the peer has granted and the frames waiting for
/// it, in order (docs/PROTOCOL.md, "Flow control"). Event-loop confined, like the multiplexer
/// that owns it.
final class OutboundFlow {
  /// A frame waiting for credit, and the promise completed when it is written.
  struct Waiter {
    let frame: WireFrame
    /// The bytes of credit it takes (0 for frames that only keep their place in the order).
    let size: Int
    let promise: EventLoopPromise<Void>
  }

  /// Credit left: the payload bytes the peer will still take on this channel.
  private(set) var credit: Int
  private var waiters = CircularBuffer<Waiter>()
  /// Why nothing more may be queued (the stream ended); nil while open.
  var closed: TransferError?

  init(credit: Int) {
    self.credit = credit
  }

  /// Whether frames wait for credit or for the connection to become writable.
  var hasWaiters: Bool { !waiters.isEmpty }

  /// Whether `bytes` may go out now, ahead of nothing (an unreliable message is sent only so).
  func canSendNow(_ bytes: Int) -> Bool { waiters.isEmpty && credit >= bytes }

  /// Queues a frame behind the others.
  func enqueue(_ waiter: Waiter) {
    waiters.append(waiter)
  }

  /// Adds credit the peer granted; false, changing nothing, when the channel's credit would go
  /// beyond `maximum` (only a broken or hostile peer grants that much).
  func addCredit(_ bytes: Int, maximum: Int) -> Bool {
    guard bytes <= maximum - credit else { return false }
    credit += bytes
    return true
  }

  /// Hands the waiting frames to `write`, in order, while credit allows; each one's promise
  /// succeeds as it goes. Returns how many were written.
  func drain(_ write: (WireFrame) -> Void) -> Int {
    var written = 0
    while let first = waiters.first, first.size <= credit {
      waiters.removeFirst()
      credit -= first.size
      write(first.frame)
      first.promise.succeed()
      written += 1
    }
    return written
  }

  /// Fails every waiting frame with `error`; the queue is left empty.
  func fail(_ error: TransferError) {
    let failed = waiters
    waiters.removeAll()
    for waiter in failed { waiter.promise.fail(error) }
  }
}
