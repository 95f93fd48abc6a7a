import NIOCore
import NIOHTTP1

extension HTTPRequestStateMachine {
  // MARK: Requests

  /// A request's head came, and its endpoint decided `decision` (request number
  /// ``nextRequest``); `hasBody`: the head announces a body. A head while another request is
  /// under way, or past the requests a connection may make, closes the connection; so does an
  /// answer from the head to a request with a body (the body is never read).
  mutating func head(
    _ decision: Decision, hasBody: Bool = false, now: ContinuousClock.Instant,
    into actions: inout [Action]
  ) {
    guard case .awaitingHead = state, requests < limits.requestsPerConnection else {
      return close(into: &actions)
    }
    requests += 1
    actions.append(.busy(true))
    if !owesAnswer {
      owesAnswer = true
      actions.append(.requestStarted)
    }
    switch decision {
    case .answer(let answer):
      actions.append(.schedule(at: nil))
      let answer =
        hasBody && !answer.closing
        ? HTTPAnswer(
          answer.status, body: answer.body, type: answer.type, closing: true,
          headers: answer.headers)
        : answer
      write(answer, request: requests, now: now, into: &actions)
    case .gather(let work, let limit):
      // The body too must come within the request's deadline.
      let deadline = now + limits.requestDeadline
      state = .gathering(
        Gathering(
          request: requests, work: work, limit: limit, deadline: deadline,
          body: ByteBuffer()))
      actions.append(.schedule(at: deadline))
    case .stream(let work, let size):
      state = .streaming(Streaming(request: requests, work: work, size: size))
      actions.append(.schedule(at: nil))
    }
  }

  /// A piece of the request's body came. `take`: takes its bytes from the server's budget for
  /// gathered bodies (false: none left).
  mutating func body(
    _ piece: ByteBuffer, now: ContinuousClock.Instant, take: (Int) -> Bool,
    into actions: inout [Action]
  ) {
    switch state {
    case .gathering(var gathering):
      let count = piece.readableBytes
      guard gathering.body.readableBytes + count <= gathering.limit else {
        return write(
          .text(.payloadTooLarge, "body too large", closing: true), request: gathering.request,
          now: now, into: &actions)
      }
      // Held against the server's budget for bodies in flight, counted in all.
      guard take(count) else {
        return write(
          .text(.serviceUnavailable, "too many requests at once; try again", closing: true),
          request: gathering.request, now: now, into: &actions)
      }
      state = .closed  // (no copy of the body while it grows)
      gathering.held += count
      var piece = piece
      gathering.body.writeBuffer(&piece)
      state = .gathering(gathering)
    case .streaming(var streaming):
      let count = UInt64(piece.readableBytes)
      guard streaming.size - streaming.received >= count else {
        actions.append(.overlong(work: streaming.work))
        return write(
          .text(.badRequest, "the body is longer than the size announced", closing: true),
          request: streaming.request, now: now, into: &actions)
      }
      streaming.received += count
      state = .streaming(streaming)
      // A piece costs its endpoint a write and a queue entry whatever its size: each counts
      // as at least 4 KiB against the window.
      actions.append(
        .feed(
          streaming.request, work: streaming.work, piece: piece,
          cost: max(piece.readableBytes, 4096)))
    case .awaitingHead, .awaitingAnswer, .responding, .closing, .closed:
      // A body nobody reads: that of a request answered from its head, or after the answer.
      break
    }
  }

  /// The request's body ended.
  mutating func end(into actions: inout [Action]) {
    switch state {
    case .gathering(let gathering):
      state = .awaitingAnswer(request: gathering.request, work: gathering.work)
      actions.append(.schedule(at: nil))
      if gathering.held > 0 { actions.append(.giveBack(gathering.held)) }
      actions.append(.deliver(gathering.request, work: gathering.work, body: gathering.body))
    case .streaming(let streaming):
      state = .awaitingAnswer(request: streaming.request, work: streaming.work)
      if streaming.paused { actions.append(contentsOf: resume()) }
      actions.append(.bodyEnded(streaming.request, work: streaming.work))
    case .awaitingHead, .awaitingAnswer, .responding, .closing, .closed:
      break
    }
  }

  /// The endpoint now waits on `work` for request `request`'s answer (a question asked about
  /// it): what closing the connection abandons.
  mutating func waiting(_ request: Int, on work: Work) {
    guard case .awaitingAnswer(request, _) = state else { return }
    state = .awaitingAnswer(request: request, work: work)
  }

  /// The endpoint's answer to request `request`. One answer per request: a late one (for a
  /// request that was answered, or an earlier one) is dropped.
  mutating func answer(
    _ answer: HTTPAnswer, request: Int, now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    switch state {
    case .gathering(let gathering) where gathering.request == request:
      write(answer, request: request, now: now, into: &actions)
    case .streaming(let streaming) where streaming.request == request:
      write(answer, request: request, now: now, into: &actions)
    case .awaitingAnswer(request, _):
      write(answer, request: request, now: now, into: &actions)
    default:
      break
    }
  }

  /// The endpoint writes request `request`'s answer itself (a download); ``responseEnded(_:now:into:)``
  /// follows.
  mutating func responding(_ request: Int) {
    guard case .awaitingAnswer(request, _) = state else { return }
    state = .responding(request: request)
  }

  /// The endpoint's own answer to request `request` is written; `closing`: the connection
  /// closes (the answer was cut short).
  mutating func responseEnded(
    _ request: Int, closing: Bool, now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    guard case .responding(request) = state else { return }
    if owesAnswer {
      owesAnswer = false
      actions.append(.requestAnswered)
    }
    if closing || requests >= limits.requestsPerConnection { return close(into: &actions) }
    idle(now: now, into: &actions)
  }

  /// Writes `answer` to request `request`: closing when it said so, when its body was not all
  /// read (what is left is never read), or when the connection made its last request.
  private mutating func write(
    _ answer: HTTPAnswer, request: Int, now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    var closing = answer.closing || requests >= limits.requestsPerConnection
    switch state {
    case .gathering(let gathering):
      closing = true
      if gathering.held > 0 { actions.append(.giveBack(gathering.held)) }
    case .streaming:
      closing = true
    default:
      break
    }
    let settles = owesAnswer
    owesAnswer = false
    actions.append(.write(answer, closing: closing, settles: settles))
    if closing {
      state = .closing
      actions.append(.schedule(at: nil))
      // Paused reads are let go: the peer's close (or ours) comes through.
      if readHeld, writable {
        readHeld = false
        actions.append(.read)
      }
    } else {
      idle(now: now, into: &actions)
    }
  }

  /// No request under way: the next head must come within the deadline.
  private mutating func idle(now: ContinuousClock.Instant, into actions: inout [Action]) {
    let deadline = now + limits.requestDeadline
    state = .awaitingHead(deadline: deadline)
    actions.append(.busy(false))
    actions.append(.schedule(at: deadline))
    if readHeld, writable {
      readHeld = false
      actions.append(.read)
    }
  }
}
