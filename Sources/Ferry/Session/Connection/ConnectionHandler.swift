import FerryWire
import NIOCore
import NIOSSL
import NIOTLS

/// The state machine of one Ferry connection, from TLS handshake to connected link
/// (docs/PROTOCOL.md, "Handshake"). Runs on the channel's event loop only; everything it reports
/// goes through closures and promises that are safe to complete from there.
///
/// Any malformed frame, unexpected message, TLS failure or missed deadline closes this connection
/// (with a GOODBYE when the channel is still usable) and never affects another.
final class ConnectionHandler: ChannelInboundHandler {
  typealias InboundIn = WireFrame
  typealias OutboundOut = WireFrame

  /// What the advertiser learns from an INVITE.
  struct IncomingInvite {
    let peer: PeerID
    let context: [UInt8]
    let timeout: Duration
  }

  enum Role {
    /// Sends INVITE after HELLO and completes `answer` with the peer on ACCEPT.
    case inviter(context: [UInt8], timeout: Duration, answer: EventLoopPromise<PeerID>)
    /// Reports the INVITE through ``onInvite`` and waits for ``accept()`` or
    /// ``decline(_:reason:)``.
    case advertiser
  }

  enum State {
    case tlsHandshake, awaitingHello, awaitingInvite, awaitingAnswer, pendingDecision, connected
    case closed
  }

  private let role: Role
  private let localName: String
  private let timeouts: ConnectionTimeouts
  private let budget: LinkBudget
  private(set) var state = State.tlsHandshake
  private(set) var remote: PeerID?
  private var context: ChannelHandlerContext?
  private var deadline: Scheduled<Void>?
  private var heartbeat: RepeatedTask?
  private var lastReceived = NIODeadline.now()
  private var pings: UInt64 = 0
  private var endReason: String?
  /// Why this end refused the peer's certificate, set by the TLS handler's verification.
  private var certificateRefusal: String?
  private var answered = false
  /// When the inviter stops waiting for an answer.
  private var answerDeadline: NIODeadline?

  /// Called once when a connected link ends, with why. Set by the session that adopts the link.
  var onLinkEnded: ((String) -> Void)?
  /// Called when a pending invitation is withdrawn or expires before an answer (advertiser).
  var onInvitationWithdrawn: (() -> Void)?
  /// Called when an INVITE arrives (advertiser).
  var onInvite: ((IncomingInvite) -> Void)?
  /// Called once the peer is known (after HELLO), before the answer (inviter).
  var onPeerKnown: ((PeerID) -> Void)?

  init(role: Role, localName: String, timeouts: ConnectionTimeouts, budget: LinkBudget) {
    self.role = role
    self.localName = localName
    self.timeouts = timeouts
    self.budget = budget
  }

  /// Records why the TLS handler refused the peer's certificate, for the failure it causes.
  func certificateRefused(_ reason: String) {
    certificateRefusal = reason
  }

  // MARK: Channel events

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    if context.channel.isActive { startHandshakeDeadline(context) }
  }

  /// Drops the context: the context holds this handler, so keeping it would keep both alive
  /// for ever once the channel is gone.
  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
    deadline?.cancel()
    heartbeat?.cancel()
  }

  func channelActive(context: ChannelHandlerContext) {
    startHandshakeDeadline(context)
    context.fireChannelActive()
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if case TLSUserEvent.handshakeCompleted(let negotiated) = event, state == .tlsHandshake {
      // The inviter offered ALPN ferry/1 and a Ferry advertiser always selects it; a TLS
      // server that ignores ALPN (a web server, openssl s_server) is refused now rather than
      // waited on for a HELLO that never comes. (An advertiser still admits clients that offer
      // no ALPN, such as openssl s_client: HELLO tells it what they speak.)
      if case .inviter = role, negotiated != WireProtocol.alpn {
        fail(
          .authenticationFailed(
            reason: "the other end speaks TLS but not Ferry's protocol "
              + "(no agreement on ALPN '\(WireProtocol.alpn)')"),
          context: context)
        return
      }
      guard let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate(),
        let der = try? certificate.toDERBytes()
      else {
        fail(.authenticationFailed(reason: "the peer presented no certificate"), context: context)
        return
      }
      tlsCompleted(peer: Fingerprint(sha256Of: der), context: context)
    }
    context.fireUserInboundEventTriggered(event)
  }

  /// TLS is up with a peer proving `fingerprint`: HELLO goes out, and the handshake goes on.
  private func tlsCompleted(peer fingerprint: Fingerprint, context: ChannelHandlerContext) {
    peerFingerprint = fingerprint
    state = .awaitingHello
    send(
      .hello(versions: WireProtocol.supportedVersions, displayName: localName), context: context)
  }

  /// For tests and the fuzzer, on a pipeline without TLS (an `EmbeddedChannel`): go on as if
  /// the TLS handshake had completed with a peer proving `fingerprint`.
  func assumeTLSCompleted(peer fingerprint: Fingerprint) {
    guard let context, state == .tlsHandshake else { return }
    tlsCompleted(peer: fingerprint, context: context)
  }

  private var peerFingerprint: Fingerprint?

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let frame = unwrapInboundIn(data)
    lastReceived = .now()
    guard frame.type.isControl else {
      // Session traffic goes on to the LinkMultiplexer, and only once connected.
      if state == .connected {
        context.fireChannelRead(data)
      } else {
        protocolViolation(WireError.unexpected(frame.type), context: context)
      }
      return
    }
    let message: ControlMessage
    do {
      message = try frame.controlMessage()
    } catch {
      protocolViolation(error, context: context)
      return
    }
    handle(message, context: context)
  }

  private func handle(_ message: ControlMessage, context: ChannelHandlerContext) {
    switch (state, message) {
    case (.awaitingHello, .hello(let versions, let name)):
      guard WireProtocol.negotiate(ours: WireProtocol.supportedVersions, theirs: versions) != nil
      else {
        send(.goodbye(.unsupportedVersion, reason: "no common protocol version"), context: context)
        fail(.protocolVersionUnsupported(peerVersions: versions), context: context)
        return
      }
      guard let fingerprint = peerFingerprint,
        let peer = try? PeerID(displayName: name, fingerprint: fingerprint)
      else {
        protocolViolation(WireError.invalidField(.hello, "display name"), context: context)
        return
      }
      remote = peer
      switch role {
      case .inviter(let invitationContext, let timeout, _):
        deadline?.cancel()
        state = .awaitingAnswer
        let clamped = min(timeout, ConnectionTimeouts.maximumInvitationTimeout)
        answerDeadline = .now() + .nanoseconds(clamped.timeAmount.nanoseconds)
        onPeerKnown?(peer)
        let milliseconds = UInt32(clamping: clamped.timeAmount.nanoseconds / 1_000_000)
        send(
          .invite(timeoutMilliseconds: milliseconds, context: invitationContext), context: context)
      case .advertiser:
        state = .awaitingInvite
      }
    case (.awaitingInvite, .invite(let milliseconds, let invitationContext)):
      guard case .advertiser = role, let remote else { return }
      deadline?.cancel()
      state = .pendingDecision
      // The inviter's wait, as it says, but never longer than the clamp: one connection must not
      // hold a prompt or a pending slot for days.
      let timeout = min(
        Duration.milliseconds(Int64(milliseconds)), ConnectionTimeouts.maximumInvitationTimeout)
      // The invitation expires when the inviter stops waiting, plus a grace second so that the
      // inviter's own timeout (and its CANCEL) comes first.
      deadline = context.eventLoop.assumeIsolated().scheduleTask(
        in: .nanoseconds((timeout + .seconds(1)).timeAmount.nanoseconds)
      ) {
        [weak self] in
        self?.expirePendingInvitation()
      }
      onInvite?(IncomingInvite(peer: remote, context: invitationContext, timeout: timeout))
    case (.awaitingAnswer, .accept):
      state = .connected
      budget.connected = true
      startHeartbeat(context)
      if let remote { answer(.success(remote)) }
    case (.awaitingAnswer, .decline(let code, let reason)):
      let error: InvitationError
      switch code {
      case .declined: error = .declined(reason: reason)
      case .busy: error = .busy
      case .sessionFull: error = .sessionFull
      }
      fail(error, context: context)
    case (.pendingDecision, .cancel):
      endReason = "the inviter withdrew the invitation"
      state = .closed
      deadline?.cancel()
      onInvitationWithdrawn?()
      context.close(promise: nil)
    case (.connected, .ping(let value)):
      // A peer that pings without reading our answers would make them pile up here.
      guard let written = budget.reply(on: context.eventLoop) else {
        return protocolViolation(
          LinkLimitExceeded(
            "the peer does not read what it is sent (\(budget.maximumQueuedReplies) replies wait)"),
          context: context)
      }
      send(.pong(value), context: context, promise: written)
    case (.connected, .pong):
      break
    case (_, .goodbye(let code, let reason)):
      endReason =
        reason.isEmpty
        ? "the peer closed the connection"
        : "the peer closed the connection: \(DisplayText.escaping(reason))"
      if code == .unsupportedVersion {
        fail(.protocolVersionUnsupported(peerVersions: []), context: context)
      } else {
        fail(.connectionFailed(reason: endReason!), context: context)
      }
    default:
      protocolViolation(WireError.unexpected(message.frameType), context: context)
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: Error) {
    switch error {
    case let wire as WireError:
      protocolViolation(wire, context: context)
    case _ where state == .tlsHandshake:
      let reason = handshakeFailureReason(error, refusal: certificateRefusal)
      fail(.authenticationFailed(reason: reason), context: context)
    case NIOSSLError.uncleanShutdown:
      // After a GOODBYE (or our own close) the reason is already known; a peer that then
      // drops the connection without a TLS close does not change it.
      if endReason == nil {
        endReason = "the peer vanished (connection closed without a TLS close)"
      }
      fail(.connectionFailed(reason: endReason!), context: context)
    default:
      fail(.connectionFailed(reason: "\(error)"), context: context)
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    let previous = state
    state = .closed
    deadline?.cancel()
    heartbeat?.cancel()
    let reason = endReason ?? "the connection was closed"
    budget.endReason = reason
    switch previous {
    case .connected:
      onLinkEnded?(reason)
      onLinkEnded = nil
    case .pendingDecision:
      onInvitationWithdrawn?()
    case .closed:
      break
    default:
      if previous == .awaitingAnswer, let answerDeadline, NIODeadline.now() >= answerDeadline {
        // The advertiser gave up at the same moment as we did.
        answer(.failure(.timedOut))
      }
      answer(
        .failure(
          previous == .tlsHandshake
            ? .authenticationFailed(
              reason: "the peer closed the connection during the TLS handshake")
            : .connectionFailed(reason: reason)))
    }
    onInvitationWithdrawn = nil
    onInvite = nil
    onPeerKnown = nil
    context.fireChannelInactive()
  }

  // MARK: Decisions (event loop only)

  /// Accepts the pending invitation; false if it is no longer pending.
  func accept() -> Bool {
    guard state == .pendingDecision, let context else { return false }
    deadline?.cancel()
    onInvitationWithdrawn = nil
    state = .connected
    budget.connected = true
    send(.accept, context: context)
    startHeartbeat(context)
    return true
  }

  /// Declines the pending invitation (or refuses an incoming one) and closes.
  func decline(_ code: ControlMessage.DeclineCode, reason: String) {
    guard state == .pendingDecision || state == .awaitingInvite, let context else { return }
    deadline?.cancel()
    onInvitationWithdrawn = nil
    state = .closed
    send(.decline(code, reason: reason), context: context)
    context.close(promise: nil)
  }

  /// The inviter gives up: sends CANCEL and closes, failing the answer with `error`.
  func withdraw(_ error: InvitationError) {
    guard let context, state != .closed, state != .connected else { return }
    if state == .awaitingAnswer { send(.cancel, context: context) }
    fail(error, context: context)
  }

  /// Closes a connected link with GOODBYE; the link is reported ended at once.
  func disconnect(reason: String) {
    guard let context, state != .closed else { return }
    endReason = reason
    send(.goodbye(.normal, reason: reason), context: context)
    endLink(reason: reason)
    context.close(promise: nil)
  }

  /// Marks a connected link ended and reports it, once.
  private func endLink(reason: String) {
    guard state == .connected else { return }
    state = .closed
    heartbeat?.cancel()
    onLinkEnded?(reason)
    onLinkEnded = nil
  }

  // MARK: Helpers

  private func startHandshakeDeadline(_ context: ChannelHandlerContext) {
    guard deadline == nil else { return }
    deadline = context.eventLoop.assumeIsolated().scheduleTask(
      in: .nanoseconds(timeouts.handshake.timeAmount.nanoseconds)
    ) { [weak self] in
      guard let self, let context = self.context else { return }
      switch self.state {
      case .tlsHandshake, .awaitingHello, .awaitingInvite:
        self.endReason = "handshake timed out"
        if self.state != .tlsHandshake {
          self.send(.goodbye(.timeout, reason: "handshake timed out"), context: context)
        }
        self.fail(.timedOut, context: context)
      default:
        break
      }
    }
  }

  private func expirePendingInvitation() {
    guard state == .pendingDecision, let context else { return }
    endReason = "the invitation expired"
    state = .closed
    onInvitationWithdrawn?()
    onInvitationWithdrawn = nil
    context.close(promise: nil)
  }

  private func startHeartbeat(_ context: ChannelHandlerContext) {
    lastReceived = .now()
    let interval = TimeAmount.nanoseconds(timeouts.heartbeatInterval.timeAmount.nanoseconds)
    let deadAfter = TimeAmount.nanoseconds(timeouts.deadAfter.timeAmount.nanoseconds)
    // Strongly held until cancelled (on close), and only touched on this loop.
    let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
    heartbeat = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) {
      _ in
      bound.value.heartbeatTick(deadAfter: deadAfter)
    }
  }

  /// Declares the link dead after `deadAfter` of silence, else sends a PING.
  private func heartbeatTick(deadAfter: TimeAmount) {
    guard let context, state == .connected else { return }
    if NIODeadline.now() - lastReceived > deadAfter {
      // Reported now: closing TLS may wait for a close_notify that a dead peer never sends.
      endLink(reason: "no sign of life for \(timeouts.deadAfter)")
      context.close(promise: nil)
      return
    }
    pings &+= 1
    send(.ping(pings), context: context)
  }

  private func protocolViolation(_ error: Error, context: ChannelHandlerContext) {
    guard state != .closed else { return }
    let reason = "\(error)"
    endReason = reason
    if state != .tlsHandshake {
      send(.goodbye(.protocolError, reason: reason), context: context)
    }
    // A connected link is reported ended now, and forwards nothing more to the multiplexer.
    endLink(reason: reason)
    fail(.connectionFailed(reason: reason), context: context)
  }

  /// Closes the link because the peer broke the protocol or one of its limits: GOODBYE with
  /// code 1 and `reason`, then close. Event loop only.
  func closeForViolation(_ reason: String) {
    guard let context else { return }
    protocolViolation(LinkViolation(description: reason), context: context)
  }

  /// Fails the inviter's answer (if still pending) and closes the connection.
  private func fail(_ error: InvitationError, context: ChannelHandlerContext) {
    answer(.failure(error))
    if endReason == nil { endReason = error.description }
    context.close(promise: nil)
  }

  /// Completes the inviter's answer promise, once.
  private func answer(_ result: Result<PeerID, InvitationError>) {
    guard case .inviter(_, _, let promise) = role, !answered else { return }
    answered = true
    switch result {
    case .success(let peer): promise.succeed(peer)
    case .failure(let error): promise.fail(error)
    }
  }

  private func send(
    _ message: ControlMessage, context: ChannelHandlerContext,
    promise: EventLoopPromise<Void>? = nil
  ) {
    context.writeAndFlush(
      wrapOutboundOut(WireFrame(message, allocator: context.channel.allocator)), promise: promise)
  }
}
