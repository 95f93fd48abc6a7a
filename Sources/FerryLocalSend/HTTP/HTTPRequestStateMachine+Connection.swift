import NIOCore

extension HTTPRequestStateMachine {
  // MARK: Pacing

  /// The channel asks for a read: done now, or held back while the endpoint catches up with a
  /// streamed body, or while the peer does not read its answers (they are not piled up: the
  /// next request waits for them).
  mutating func readRequested(into actions: inout [Action]) {
    if isPaused || !writable {
      readHeld = true
    } else {
      actions.append(.read)
    }
  }

  /// The channel takes writes again (or not).
  mutating func writabilityChanged(_ writable: Bool, into actions: inout [Action]) {
    self.writable = writable
    if writable, !isPaused, readHeld {
      readHeld = false
      actions.append(.read)
    }
  }

  /// The endpoint took a piece of request `request`'s streamed body; `mayRead`: whether it
  /// wants more now (else reads pause until ``endpointCaughtUp(_:into:)``).
  mutating func fed(_ request: Int, mayRead: Bool) {
    guard !mayRead, case .streaming(var streaming) = state, streaming.request == request else {
      return
    }
    streaming.paused = true
    state = .streaming(streaming)
  }

  /// The endpoint caught up with request `request`'s streamed body: reads go on.
  mutating func endpointCaughtUp(_ request: Int, into actions: inout [Action]) {
    guard case .streaming(var streaming) = state, streaming.request == request, streaming.paused
    else { return }
    streaming.paused = false
    state = .streaming(streaming)
    actions.append(contentsOf: resume())
  }

  /// The read held back, if any, now that nothing pauses reads.
  mutating func resume() -> [Action] {
    guard readHeld, writable else { return [] }
    readHeld = false
    return [.read]
  }

  /// Whether a streamed body is paused.
  private var isPaused: Bool {
    if case .streaming(let streaming) = state { return streaming.paused }
    return false
  }

  // MARK: Time

  /// The connection's timer went off at `now`: a head (or a gathered body) that did not come
  /// by its deadline closes the connection.
  mutating func timerFired(now: ContinuousClock.Instant, into actions: inout [Action]) {
    switch state {
    case .awaitingHead(let deadline) where now >= deadline:
      close(into: &actions)
    case .gathering(let gathering) where now >= gathering.deadline:
      close(into: &actions)
    default:
      break
    }
  }

  /// Nothing was read or written for the connection's idle time (NIO's `IdleStateHandler`,
  /// all directions): closed — unless it waits for its endpoint (an answer owed, a paused
  /// body, a long answer being written), which is not the connection's silence.
  mutating func idleTimeout(into actions: inout [Action]) {
    switch state {
    case .awaitingHead, .gathering, .closing:
      close(into: &actions)
    case .streaming(let streaming) where !streaming.paused:
      close(into: &actions)
    case .streaming, .awaitingAnswer, .responding, .closed:
      break
    }
  }

  // MARK: End

  /// The connection closed: what was under way is abandoned (a gathered body's bytes given
  /// back, an endpoint told), and an owed answer never comes.
  mutating func closed(into actions: inout [Action]) {
    switch state {
    case .gathering(let gathering):
      if gathering.held > 0 { actions.append(.giveBack(gathering.held)) }
    case .streaming(let streaming):
      actions.append(.abandoned(work: streaming.work))
    case .awaitingAnswer(_, let work):
      actions.append(.abandoned(work: work))
    case .awaitingHead, .responding, .closing, .closed:
      break
    }
    if owesAnswer {
      owesAnswer = false
      actions.append(.requestAnswered)
    }
    state = .closed
  }

  /// Closes the connection (once). What is under way is abandoned when the channel says it
  /// closed (``closed(into:)``).
  mutating func close(into actions: inout [Action]) {
    switch state {
    case .closing, .closed:
      return
    case .gathering(let gathering):
      if gathering.held > 0 { actions.append(.giveBack(gathering.held)) }
      state = .closing
    case .awaitingHead:
      state = .closing
    case .streaming, .awaitingAnswer, .responding:
      break
    }
    actions.append(.close)
  }
}
