import NIOCore
import NIOHTTP1

/// What a server's endpoints do with the requests its connections read
/// (``HTTPConnectionHandler`` performs ``HTTPRequestStateMachine``'s actions through it): decide
/// from a request's head (answer, gather its body, or stream it), take a gathered body or a
/// streamed one piece by piece, and learn what the connection abandons. Called on the
/// connection's event loop; an answer may be given later, from any thread, through the
/// request's ``HTTPReply``.
package protocol HTTPEndpoints: AnyObject, Sendable {
  /// The endpoints' own word for what a request is about.
  associatedtype Work: Sendable

  /// The headers every answer carries (the web pages' security headers).
  var extraHeaders: [(String, String)] { get }

  /// Decides about a request from its head (``HTTPRequestStateMachine/Decision``); `reply`
  /// answers it later (an upload's verdict, which may come before its body ends).
  func decide(_ head: HTTPRequestHead, _ request: HTTPRequest, reply: HTTPReply)
    -> HTTPRequestStateMachine<Work>.Decision

  /// Request `request`'s gathered body, for `work`: answered through `reply`. Returns what the
  /// request now waits on, if that changed (what the connection's close abandons).
  func deliver(_ work: Work, body: ByteBuffer, _ request: HTTPRequest, reply: HTTPReply)
    -> Work?

  /// A piece of request `request`'s streamed body, for `work`, costing `cost` against the
  /// endpoint's window: whether more may be read now (else `caughtUp` is called, once, when it
  /// may).
  func feed(
    _ work: Work, piece: ByteBuffer, cost: Int, _ request: HTTPRequest,
    caughtUp: @escaping @Sendable () -> Void
  ) -> Bool

  /// Request `request`'s streamed body ended: answered through `reply`. Returns what the
  /// request now waits on, if that changed.
  func bodyEnded(_ work: Work, _ request: HTTPRequest, reply: HTTPReply) -> Work?

  /// A streamed body was longer than allowed (the answer is a 400, and the connection closes).
  func overlong(_ work: Work)

  /// The connection closed with `work` under way (a question asked, an upload cut off).
  func abandoned(_ work: Work, _ request: HTTPRequest)

  /// The connection in `slot` has a request under way (or none): a new connection past the
  /// server's cap may take the place of an idle one only.
  func connection(_ slot: Int, busy: Bool)

  /// A request began whose answer is owed.
  func requestStarted()

  /// An owed answer was flushed (or will never be).
  func requestAnswered()
}

/// One request, as the endpoints see it.
package struct HTTPRequest: Sendable {
  /// Its number on its connection (from 1).
  package let number: Int
  /// Where it comes from (``PeerAddress``).
  package let address: String
  /// Its connection's place among the server's (``ConnectionSlots``).
  package let slot: Int
  /// Its connection.
  package let channel: any Channel
}
