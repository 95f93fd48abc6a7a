import NIOCore
import NIOHTTP1

/// The requests of one HTTP connection, one at a time, as a value: what state the connection is
/// in (waiting for a head, gathering a body, feeding a body to its endpoint, waiting for the
/// endpoint's answer, writing a long answer, closing), what each event does to it, and what
/// the channel handler must do about it (``Action``). No I/O, no clock of its own (the time is
/// passed in), no locks: the handler (``HTTPConnectionHandler``) performs the actions, on the
/// connection's event loop.
///
/// `Work` is the endpoint's own word for what a request is about (a route, an upload, a
/// question being asked): carried by the states that need it, handed back with the actions
/// that concern it.
///
/// Limits it keeps: each request's head — and a gathered body — must come within
/// ``Limits/requestDeadline`` of the connection or of the last answer (a trickle does not
/// extend it); a body is never longer than its endpoint said; at most
/// ``Limits/requestsPerConnection`` requests per connection; an answer written before its
/// request's body ended closes the connection (what is left of the body is never read).
package struct HTTPRequestStateMachine<Work: Sendable> {
  /// The limits of one connection.
  package struct Limits: Sendable {
    /// How long a request's head (and a gathered body) may take to come.
    package var requestDeadline: Duration = .seconds(10)
    /// The most requests one connection may make: a peer cannot hold a connection slot for
    /// ever by asking for a page now and then.
    package var requestsPerConnection = 256

    /// Limits: a head within `requestDeadline`, at most `requestsPerConnection` requests.
    package init(requestDeadline: Duration = .seconds(10), requestsPerConnection: Int = 256) {
      (self.requestDeadline, self.requestsPerConnection) = (requestDeadline, requestsPerConnection)
    }
  }

  /// Where the connection is.
  enum State {
    /// Between requests: the next head must come by `deadline`.
    case awaitingHead(deadline: ContinuousClock.Instant)
    /// Gathering a body, for `work`.
    case gathering(Gathering)
    /// Handing a body to its endpoint as it comes.
    case streaming(Streaming)
    /// The request is all read; its endpoint owes the answer.
    case awaitingAnswer(request: Int, work: Work)
    /// Its endpoint writes a long answer (a download) itself.
    case responding(request: Int)
    /// Answered before its body ended, or refused: closing once the answer is out.
    case closing
    /// Closed.
    case closed
  }

  /// A body being gathered.
  struct Gathering {
    let request: Int
    let work: Work
    /// The most bytes it may have.
    let limit: Int
    let deadline: ContinuousClock.Instant
    var body: ByteBuffer
    /// Its bytes taken from the server's budget (given back once it is handled).
    var held = 0
  }

  /// A body handed to its endpoint as it comes.
  struct Streaming {
    let request: Int
    let work: Work
    /// Its length, as the endpoint allows it.
    let size: UInt64
    var received: UInt64 = 0
    /// Whether the endpoint asked for no more until it catches up.
    var paused = false
  }

  /// What the endpoint decides about a request from its head.
  package enum Decision {
    /// Answer now; the body (if any) is not read — a closing answer closes the connection,
    /// any other drops what is left of it.
    case answer(HTTPAnswer)
    /// Gather a body of at most `limit` bytes (within the request's deadline), then hand it
    /// over (``Action/deliver(_:work:body:)``).
    case gather(Work, limit: Int)
    /// Hand the body to the endpoint as it comes (at most `size` bytes; no deadline but the
    /// endpoint's own), then say that it ended (``Action/bodyEnded(_:work:)``).
    case stream(Work, size: UInt64)
  }

  /// What the channel handler must do.
  enum Action {
    /// Read more (a read held back until then).
    case read
    /// Close the connection now.
    case close
    /// Arm the connection's one timer for `at` (replacing any armed), or disarm it (nil).
    case schedule(at: ContinuousClock.Instant?)
    /// The connection has a request under way (its slot is not given to a new connection),
    /// or none.
    case busy(Bool)
    /// A request began whose answer is owed (the server counts them, to let the last answers
    /// leave before it stops).
    case requestStarted
    /// Write `answer`; `closing`: close the connection once it is out (forced after a grace,
    /// for a peer that reads nothing). `settles`: the owed answer is out once it is flushed.
    case write(HTTPAnswer, closing: Bool, settles: Bool)
    /// The owed answer will never be written (the connection closed first).
    case requestAnswered
    /// Give `count` bytes back to the server's budget for bodies in flight.
    case giveBack(Int)
    /// The gathered body of request `request`, for `work`.
    case deliver(Int, work: Work, body: ByteBuffer)
    /// A piece of the streamed body of `work`, costing `cost` against the endpoint's window.
    case feed(Int, work: Work, piece: ByteBuffer, cost: Int)
    /// The streamed body of `work` ended.
    case bodyEnded(Int, work: Work)
    /// The streamed body of `work` was longer than allowed (a violation; the answer follows).
    case overlong(work: Work)
    /// The request for `work` will never be answered: its connection closed (a question to
    /// withdraw, an upload cut off).
    case abandoned(work: Work)
  }

  /// Where the connection is (changed only by the events).
  var state: State
  let limits: Limits
  /// Requests made so far (the current one included).
  var requests = 0
  /// Whether an answer is owed: a request began and its answer is not flushed.
  var owesAnswer = false
  /// A read the handler was asked for and holds back (paused, or answers not read).
  var readHeld = false
  /// Whether the channel takes writes.
  var writable = true

  /// A connection that opened at `now`.
  init(limits: Limits = Limits(), now: ContinuousClock.Instant) {
    self.limits = limits
    state = .awaitingHead(deadline: now + limits.requestDeadline)
  }

  /// The actions of a connection that just opened: the first head's deadline armed.
  var opened: [Action] {
    guard case .awaitingHead(let deadline) = state else { return [] }
    return [.schedule(at: deadline)]
  }

  /// The number the next request will have.
  var nextRequest: Int { requests + 1 }
}
