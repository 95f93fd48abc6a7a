internal import FerryWire

/// The protocol of one Ferry connection, from the TLS handshake to a connected link and its end
/// (docs/PROTOCOL.md §5), as a pure value: each event (a frame, a timer, the application's
/// answer, the channel's end) moves it to its next state and returns the actions to perform;
/// ``ConnectionHandler`` performs them on the channel and does nothing else. No I/O, no clock,
/// no NIO: every state × event pair is unit-tested (ConnectionStateMachineTests).
///
/// Like NIOTLS's `ProtocolNegotiationHandlerStateMachine`, each state carries the data that is
/// valid in it (the peer once HELLO told its name, the inviter's deadline), so that no field can
/// be read in a state where it means nothing. As in swift-nio-ssh, each state is a struct of its
/// own (States/) that makes the next one (`Known.invited`, `Asked.revealed`,
/// `Connected.init(_ previous: Pending)`…): this type dispatches each event and says what to do.
///
/// The verification code (§6) is settled here too: the advertiser commits to its nonce (COMMIT)
/// as soon as it knows the peer, the inviter sends its own nonce in INVITE only once it holds
/// that commitment, and the advertiser reveals its nonce (REVEAL, ``reveal()``) once it admits
/// the invitation, before the application is asked; the inviter checks it against the
/// commitment, and waits for it no longer than the handshake deadline.
struct ConnectionStateMachine {
  let role: Role
  let localName: String
  /// This end's fingerprint, hashed into the verification code.
  let localFingerprint: Fingerprint
  let timeouts: ConnectionTimeouts
  private(set) var state = State.tlsHandshake
  /// This end's verification nonce: the advertiser's (committed to in COMMIT, sent in REVEAL)
  /// or the inviter's (sent in INVITE).
  private let nonce: [UInt8]

  /// - Parameters:
  ///   - localFingerprint: This end's fingerprint (the verification code hashes both).
  ///   - nonce: This end's verification nonce, 32 bytes (fresh and random, but for tests).
  init(
    role: Role, localName: String, localFingerprint: Fingerprint, timeouts: ConnectionTimeouts,
    nonce: [UInt8] = VerificationCode.makeNonce()
  ) {
    precondition(nonce.count == ControlMessage.nonceSize, "a nonce is 32 bytes")
    self.role = role
    self.localName = localName
    self.localFingerprint = localFingerprint
    self.timeouts = timeouts
    self.nonce = nonce
  }

  /// The peer, once its HELLO named it (and until the connection ended).
  var peer: PeerID? {
    switch state {
    case .awaitingCommit(let known), .awaitingInvite(let known): known.peer
    case .awaitingAnswer(let asked): asked.known.peer
    case .pendingDecision(let pending): pending.known.peer
    case .connected(let connected): connected.peer
    case .tlsHandshake, .awaitingHello, .closed: nil
    }
  }

  /// The protocol version both ends agreed on in HELLO (nil before).
  var version: UInt16? {
    switch state {
    case .awaitingCommit(let known), .awaitingInvite(let known): known.version
    case .awaitingAnswer(let asked): asked.known.version
    case .pendingDecision(let pending): pending.known.version
    case .connected(let connected): connected.version
    case .closed(let closed): closed.version
    case .tlsHandshake, .awaitingHello: nil
    }
  }

  /// The connection's verification code, once both nonces are known: on the advertiser from
  /// the INVITE, on the inviter from REVEAL.
  var verificationCode: VerificationCode? {
    switch state {
    case .awaitingAnswer(let asked): asked.code
    case .pendingDecision(let pending): pending.code
    case .connected(let connected): connected.code
    case .closed(let closed): closed.code
    case .tlsHandshake, .awaitingHello, .awaitingCommit, .awaitingInvite: nil
    }
  }

  /// Why the connection ended, once it did: what transfers under way report.
  var end: LinkEnd? {
    if case .closed(let closed) = state { return closed.end }
    return nil
  }

  /// Whether the advertiser sent REVEAL for its pending invitation.
  var revealed: Bool {
    if case .pendingDecision(let pending) = state { return pending.revealed }
    return false
  }

  /// Whether TLS is still being negotiated.
  var isInTLSHandshake: Bool { state == .tlsHandshake }

  /// Whether the advertiser's invitation waits for the application.
  var isPendingDecision: Bool {
    if case .pendingDecision = state { return true }
    return false
  }

  /// Whether the link is connected.
  var isConnected: Bool {
    if case .connected = state { return true }
    return false
  }

  /// Whether the connection ended.
  var isClosed: Bool {
    if case .closed = state { return true }
    return false
  }

  // MARK: Events from the channel

  /// TLS completed with a peer proving `fingerprint` (nil: it presented no usable
  /// certificate), having agreed on `alpn` (nil: none), with `keyingMaterial` the session's
  /// exporter value for the verification code (nil: none could be derived).
  mutating func tlsCompleted(
    peer fingerprint: Fingerprint?, alpn: String?, keyingMaterial: [UInt8]?
  ) -> [Action] {
    guard state == .tlsHandshake else { return [] }
    let completed = Greeting.tlsCompleted(
      role: role, peer: fingerprint, alpn: alpn, keyingMaterial: keyingMaterial)
    switch completed {
    case .failure(let error):
      return fail(error)
    case .success(let greeting):
      state = .awaitingHello(greeting)
      return [.send(.hello(versions: WireProtocol.supportedVersions, displayName: localName))]
    }
  }

  /// A session frame (type 0x10 and above) arrived: passed on only once connected.
  mutating func sessionFrame(_ type: FrameType) -> [Action] {
    if case .connected = state { return [.forward] }
    return violation(WireError.unexpected(type).description)
  }

  /// A control message arrived at `now`.
  mutating func received(_ message: ControlMessage, now: ContinuousClock.Instant) -> [Action] {
    switch (state, message) {
    case (.awaitingHello(let greeting), .hello(let versions, let name)):
      return hello(from: greeting, versions: versions, name: name)
    case (.awaitingCommit(let known), .commit(let digest)):
      return commit(digest, from: known, now: now)
    case (.awaitingInvite(let known), .invite(let milliseconds, let inviterNonce, let context)):
      let (pending, invite) = known.invited(
        milliseconds: milliseconds, inviterNonce: inviterNonce, context: context,
        advertiserNonce: nonce, localFingerprint: localFingerprint, now: now)
      state = .pendingDecision(pending)
      // It expires when the inviter stops waiting, plus a grace second so that the inviter's
      // own timeout (and its CANCEL) comes first. REVEAL waits for ``reveal()``: only an
      // invitation this end admits gives the inviter its code.
      return [.cancelDeadline, .scheduleExpiry(invite.timeout + .seconds(1)), .invite(invite)]
    case (.awaitingAnswer(let asked), .reveal(let advertiserNonce)) where asked.commitment != nil:
      guard
        let (next, code) = asked.revealed(
          advertiserNonce: advertiserNonce, inviterNonce: nonce, localFingerprint: localFingerprint)
      else {
        return violation("the nonce in REVEAL does not match the COMMIT")
      }
      state = .awaitingAnswer(next)
      return [.cancelDeadline, .verificationCode(code)]
    case (.awaitingAnswer(let asked), .accept):
      // An ACCEPT before REVEAL is a protocol error: the code was never shown.
      guard let connected = Connected(asked) else {
        return violation(WireError.unexpected(message.frameType).description)
      }
      let answering = answer(.success(asked.known.peer))
      state = .connected(connected)
      return [.markConnected, .startHeartbeat] + answering
    case (.awaitingAnswer, .decline(let code, let reason)):
      switch code {
      case .declined: return fail(.declined(reason: reason))
      case .busy: return fail(.busy)
      case .sessionFull: return fail(.sessionFull)
      }
    case (.pendingDecision, .cancel):
      return [.cancelDeadline] + close(.lost(words: "the inviter withdrew the invitation"))
        + [.close]
    case (.connected, .ping(let value)):
      return [.pong(value)]
    case (.connected, .pong):
      return []
    case (.closed, _):
      return []
    case (_, .goodbye(let code, let reason)):
      let end = LinkEnd.goodbye(code, reason: reason)
      switch code {
      case .unsupportedVersion: return fail(.protocolVersionUnsupported(peerVersions: []), end)
      case .protocolError:
        let what = reason.isEmpty ? "" : ": \(DisplayText.escaping(reason))"
        return fail(.protocolViolation(reason: "the peer reported one\(what)"), end)
      case .timeout: return fail(.connectionFailed(reason: end.description), end)
      case .normal, .superseded: return fail(.closedByPeer(reason: end.description), end)
      }
    default:
      return violation(WireError.unexpected(message.frameType).description)
    }
  }

  private mutating func hello(from greeting: Greeting, versions: [UInt16], name: String)
    -> [Action]
  {
    switch greeting.hello(versions: versions, name: name) {
    case .noCommonVersion:
      return [.send(.goodbye(.unsupportedVersion, reason: "no common protocol version"))]
        + fail(.protocolVersionUnsupported(peerVersions: versions))
    case .invalidName:
      return violation(WireError.invalidField(.hello, "display name").description)
    case .known(let known):
      switch role {
      case .inviter:
        // INVITE carries our nonce: it waits for the advertiser's commitment (the handshake
        // deadline still runs).
        state = .awaitingCommit(known)
        return [.peerKnown(known.peer)]
      case .advertiser:
        // Committed before the INVITE shows the inviter's nonce.
        state = .awaitingInvite(known)
        return [.send(.commit(VerificationCode.commitment(to: nonce)))]
      }
    }
  }

  /// The inviter has the advertiser's commitment: INVITE, with this end's nonce.
  private mutating func commit(
    _ digest: [UInt8], from known: Known, now: ContinuousClock.Instant
  ) -> [Action] {
    guard case .inviter(let context, let timeout) = role else { return [] }
    let (asked, milliseconds) = known.committed(digest, timeout: timeout, now: now)
    state = .awaitingAnswer(asked)
    // The handshake deadline still runs, until REVEAL: an advertiser reveals at once, and a man
    // in the middle must not hold this end while it looks for a code that matches.
    return [.send(.invite(timeoutMilliseconds: milliseconds, nonce: nonce, context: context))]
  }

  // MARK: Timers

  /// A heartbeat tick, the peer having been silent for `silence`: PING, or the link is dead.
  mutating func heartbeat(silentFor silence: Duration) -> [Action] {
    guard case .connected(var connected) = state else { return [] }
    guard silence <= timeouts.deadAfter else {
      // Reported now: closing TLS may wait for a close_notify that a dead peer never sends.
      // Kept as the end's reason, so that nothing later calls a dead link merely "closed".
      return close(.timedOut(.seconds(timeouts.deadAfter.components.seconds))) + [.close]
    }
    let number = connected.ping()
    state = .connected(connected)
    return [.send(.ping(number))]
  }

  // MARK: The application

  /// Reveals this advertiser's nonce (REVEAL) for the pending invitation, once: when the
  /// invitation is admitted, before the application is asked. The inviter then knows the code
  /// and can show it while this end decides. No actions when it is not pending or revealed.
  mutating func reveal() -> [Action] {
    guard case .pendingDecision(let pending) = state, let next = pending.revealing() else {
      return []
    }
    state = .pendingDecision(next)
    return [.send(.reveal(nonce))]
  }

  /// Accepts the pending invitation (revealing first if that was not done: an ACCEPT never
  /// precedes REVEAL); no actions when it is no longer pending.
  mutating func accept() -> [Action] {
    guard case .pendingDecision = state else { return [] }
    let revealing = reveal()
    guard case .pendingDecision(let pending) = state else { return [] }
    state = .connected(Connected(pending))
    return [.cancelDeadline, .markConnected] + revealing + [.send(.accept), .startHeartbeat]
  }

  /// Declines the pending invitation (or refuses an incoming one before it is reported) and
  /// closes.
  mutating func decline(_ code: ControlMessage.DeclineCode, reason: String) -> [Action] {
    switch state {
    case .pendingDecision, .awaitingInvite:
      state = .closed(
        Closed(
          end: .closedHere(words: "declined: \(reason)"), version: version,
          code: verificationCode))
      return [.cancelDeadline, .send(.decline(code, reason: reason)), .close]
    default:
      return []
    }
  }

  // MARK: Helpers

  /// Ends the connection with `end`, once: a connected link is reported ended, a pending
  /// invitation withdrawn.
  mutating func close(_ end: LinkEnd) -> [Action] {
    let previous = state
    switch previous {
    case .closed: return []
    default: state = .closed(Closed(end: end, version: version, code: verificationCode))
    }
    switch previous {
    case .connected: return [.stopHeartbeat, .linkEnded(end)]
    case .pendingDecision: return [.invitationWithdrawn]
    default: return []
    }
  }
}
