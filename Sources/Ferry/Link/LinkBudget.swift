import NIOCore

/// What the handlers of one connection share about its limits: whether the handshake is over
/// (frame caps depend on it), how many replies wait for a peer that does not read, and why the
/// connection ended.
///
/// Confined to the connection's event loop, like the handlers that hold it.
final class LinkBudget {
  /// Whether the link is connected (the invitation was accepted): until then only control
  /// frames are allowed, and a session frame is refused from its header, before its payload
  /// is buffered.
  var connected = false

  /// Why the connection ended, when the connection handler knows (a GOODBYE's reason, a
  /// protocol error, a dead heartbeat): what transfers under way report.
  var endReason: String?

  /// The most replies (each flush of PONG, CREDIT, FILE_ACK, RESET … frames) that may wait to be
  /// written to the socket.
  var maximumQueuedReplies: Int

  /// Replies handed to the channel and not yet written to the socket.
  private var queuedReplies = 0

  init(maximumQueuedReplies: Int = SessionLimits().maximumQueuedReplies) {
    self.maximumQueuedReplies = maximumQueuedReplies
  }

  /// Accounts for one reply about to be written; false when more than
  /// ``maximumQueuedReplies`` already wait (the peer does not read them: the link must be
  /// closed). Each reply pins a TLS record buffer (about 16 KiB) until it is written, whatever
  /// its size, which is why replies are counted rather than their bytes. Pass the returned
  /// promise with the reply's last write.
  func reply(on loop: any EventLoop) -> EventLoopPromise<Void>? {
    guard queuedReplies < maximumQueuedReplies else { return nil }
    queuedReplies += 1
    let promise = loop.makePromise(of: Void.self)
    let budget = NIOLoopBound(self, eventLoop: loop)
    promise.futureResult.whenComplete { _ in budget.value.queuedReplies -= 1 }
    return promise
  }
}
