internal import FerryWire

/// How a connection ends: the channel's error or end, a deadline, the inviter giving up, a
/// disconnect, a violation; and the inviter's answer.
extension ConnectionStateMachine {
  // MARK: Events from the channel

  /// The channel reported an error.
  mutating func errorCaught(_ error: ChannelError) -> [Action] {
    switch error {
    case .wire(let wire):
      return violation(wire.description)
    case .tlsHandshake(let reason):
      return fail(.authenticationFailed(reason: reason))
    case .tlsHandshakeInterrupted(let reason):
      return fail(.connectionFailed(reason: reason))
    case .uncleanShutdown:
      // After a GOODBYE (or our own close) the reason is already known; a peer that then
      // drops the connection without a TLS close does not change it.
      let end = LinkEnd.lost(words: "the peer vanished (connection closed without a TLS close)")
      return fail(.connectionFailed(reason: end.description), end)
    case .other(let text):
      return fail(.connectionFailed(reason: text))
    }
  }

  /// The channel closed at `now`: whatever was waiting learns why.
  mutating func channelInactive(now: ContinuousClock.Instant) -> [Action] {
    let closed = LinkEnd.lost(words: "the connection was closed")
    var actions: [Action] = [.cancelDeadline, .stopHeartbeat]
    switch state {
    case .closed, .connected, .pendingDecision:
      break
    case .awaitingAnswer(let asked) where now >= asked.expiresAt:
      // The advertiser gave up at the same moment as we did.
      actions += answer(.failure(.timedOut))
    case .tlsHandshake:
      // No alert came (that would have been an error first): the connection just went away.
      actions += answer(
        .failure(.connectionFailed(reason: "the connection closed during the TLS handshake")))
    case .awaitingHello, .awaitingCommit, .awaitingInvite, .awaitingAnswer:
      actions += answer(.failure(.connectionFailed(reason: closed.description)))
    }
    return actions + close(closed).filter { $0 != .stopHeartbeat }
  }

  // MARK: Timers

  /// The handshake deadline passed (``ConnectionTimeouts/handshake``).
  mutating func handshakeDeadlinePassed() -> [Action] {
    let timedOut = LinkEnd.lost(words: "handshake timed out")
    switch state {
    case .tlsHandshake:
      return fail(.timedOut, timedOut)
    case .awaitingHello, .awaitingCommit, .awaitingInvite:
      return [.send(.goodbye(.timeout, reason: "handshake timed out"))] + fail(.timedOut, timedOut)
    case .awaitingAnswer(let asked) where asked.commitment != nil:
      return [.send(.cancel)]
        + fail(.timedOut, .lost(words: "the advertiser did not reveal its nonce in time"))
    case .awaitingAnswer, .pendingDecision, .connected, .closed:
      return []
    }
  }

  /// The pending invitation's time ran out.
  mutating func invitationExpired() -> [Action] {
    guard case .pendingDecision = state else { return [] }
    return close(.lost(words: "the invitation expired")) + [.close]
  }

  // MARK: The application

  /// The inviter gives up: CANCEL if it is waiting for the answer, and close, failing the
  /// answer with `error`.
  mutating func withdraw(_ error: InvitationError) -> [Action] {
    switch state {
    case .closed, .connected: return []
    case .awaitingAnswer: return [.send(.cancel)] + fail(error)
    default: return fail(error)
    }
  }

  /// Closes with GOODBYE; a connected link is reported ended at once.
  mutating func disconnect(reason: String) -> [Action] {
    guard !isClosed else { return [] }
    return [.send(.goodbye(.normal, reason: reason))]
      + close(.closedHere(words: reason)) + [.close]
  }

  /// Closes with GOODBYE because another link between the same two peers takes this one's
  /// place: code `superseded` (version 5), or code 0 with its words to a peer of version 4.
  mutating func disconnect(superseded: Supersession) -> [Action] {
    guard !isClosed else { return [] }
    let code: ControlMessage.GoodbyeCode =
      (version ?? 0) >= WireProtocol.streamedFilesVersion ? .superseded : .normal
    return [.send(.goodbye(code, reason: superseded.words))]
      + close(.superseded(words: superseded.words)) + [.close]
  }

  /// The peer broke the protocol or one of the link's limits: GOODBYE with code 1 and the
  /// reason (unless TLS is not up), the link reported ended, the connection closed.
  mutating func violation(_ reason: String) -> [Action] {
    guard !isClosed else { return [] }
    var actions: [Action] = []
    if state != .tlsHandshake { actions.append(.send(.goodbye(.protocolError, reason: reason))) }
    return actions + fail(.protocolViolation(reason: reason), .violation(words: reason))
  }

  // MARK: Helpers

  /// Fails the inviter's answer (if still pending), ends the connection (with `end`, or the
  /// error's words) and closes it.
  mutating func fail(_ error: InvitationError, _ end: LinkEnd? = nil) -> [Action] {
    let answering = answer(.failure(error))
    return answering + close(end ?? .lost(words: error.description)) + [.close]
  }

  /// Completes the inviter's answer, once: while it still waits for one (before the link is
  /// connected, and before the connection ended).
  func answer(_ result: Result<PeerID, InvitationError>) -> [Action] {
    guard case .inviter = role else { return [] }
    switch state {
    case .tlsHandshake, .awaitingHello, .awaitingCommit, .awaitingAnswer:
      return [.answer(result)]
    case .awaitingInvite, .pendingDecision, .connected, .closed:
      return []
    }
  }
}
