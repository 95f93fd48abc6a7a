internal import FerryWire
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// Runs one Ferry connection's ``ConnectionStateMachine`` on its channel: feeds it the channel's
/// events, frames and timers and the application's answers, and performs the actions it returns
/// (writes, closes, timers, callbacks). The protocol's decisions are all in the state machine;
/// this handler only does what it is told (docs/PROTOCOL.md, "Handshake and states").
///
/// Event-loop confined: every method runs on the channel's event loop, and everything it reports
/// goes through closures and promises that are safe to complete from there. Any malformed
/// frame, unexpected message, TLS failure or missed deadline closes this connection (with a
/// GOODBYE when the channel is still usable) and never affects another.
final class ConnectionHandler: ChannelInboundHandler {
  typealias InboundIn = WireFrame
  typealias OutboundOut = WireFrame

  /// What the advertiser learns from an INVITE.
  typealias IncomingInvite = ConnectionStateMachine.IncomingInvite

  /// Which end of the invitation this handler runs.
  enum Role {
    /// Sends INVITE after HELLO and completes `answer` with the peer on ACCEPT.
    case inviter(context: [UInt8], timeout: Duration, answer: EventLoopPromise<PeerID>)
    /// Reports the INVITE through ``onInvite`` and waits for ``accept()`` or
    /// ``decline(_:reason:)``.
    case advertiser
  }

  private var machine: ConnectionStateMachine
  private let answerPromise: EventLoopPromise<PeerID>?
  private let budget: LinkBudget
  private var context: ChannelHandlerContext?
  private var deadline: Scheduled<Void>?
  private var heartbeat: RepeatedTask?
  /// When the peer last sent anything, on the event loop's clock (virtual in tests).
  private var lastReceived = NIODeadline.uptimeNanoseconds(0) {
    didSet { activity.heard() }
  }
  /// When the peer last sent anything, readable from any thread (``Session`` asks whether a
  /// link is alive).
  let activity = LinkActivity()
  /// The certificate the peer presented, once the TLS handshake completed.
  let peerCertificate = PeerCertificateSlot()
  /// Where this connection's TLS context logs its exporter secret (``TLSContexts``), from which
  /// the verification code's keying material is derived once the handshake completed.
  let exporter = TLSExporter()
  /// Why this end refused the peer's certificate, set by the TLS handler's verification.
  private var certificateRefusal: String?
  /// ``FerryLogging/logger`` when the connection opened, with its remote address and (once
  /// known) its peer as metadata.
  private var logger = FerryLogging.logger
  /// Whether the link was ever connected (a link that was not is logged when it closes).
  private var wasConnected = false

  /// Called once when a connected link ends, with why. Set by the session that adopts the link.
  var onLinkEnded: ((LinkEnd) -> Void)?
  /// Called when a pending invitation is withdrawn or expires before an answer (advertiser).
  var onInvitationWithdrawn: (() -> Void)?
  /// Called when an INVITE arrives (advertiser).
  var onInvite: ((IncomingInvite) -> Void)?
  /// Called once the peer is known (after HELLO), before the answer (inviter).
  var onPeerKnown: ((PeerID) -> Void)?
  /// Called once the verification code is known (on REVEAL), before the answer (inviter).
  var onVerificationCode: ((PeerID, VerificationCode) -> Void)?

  /// - Parameter localFingerprint: This end's fingerprint (the verification code hashes both).
  init(
    role: Role, localName: String, localFingerprint: Fingerprint, timeouts: ConnectionTimeouts,
    budget: LinkBudget
  ) {
    switch role {
    case .inviter(let context, let timeout, let answer):
      machine = ConnectionStateMachine(
        role: .inviter(context: context, timeout: timeout), localName: localName,
        localFingerprint: localFingerprint, timeouts: timeouts)
      answerPromise = answer
    case .advertiser:
      machine = ConnectionStateMachine(
        role: .advertiser, localName: localName, localFingerprint: localFingerprint,
        timeouts: timeouts)
      answerPromise = nil
    }
    self.budget = budget
  }

  /// The peer, once its HELLO named it.
  var remote: PeerID? { machine.peer }
  /// Whether the advertiser's invitation waits for the application's answer.
  var isPendingDecision: Bool { machine.isPendingDecision }
  /// Whether the link is connected.
  var isConnected: Bool { machine.isConnected }
  /// The protocol version agreed on in HELLO (nil before).
  var protocolVersion: UInt16? { machine.version }
  /// Why the connection ended, once it did.
  var end: LinkEnd? { machine.end }
  /// The connection's verification code, once both nonces are known (advertiser: on INVITE;
  /// inviter: on REVEAL).
  var verificationCode: VerificationCode? { machine.verificationCode }

  /// Records why the TLS handler refused the peer's certificate, for the failure it causes.
  func certificateRefused(_ reason: String) {
    certificateRefusal = reason
  }

  // MARK: Channel events

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    noteRemote(context)
    if context.channel.isActive { startHandshakeDeadline(context) }
  }

  /// Drops the context: the context holds this handler, so keeping it would keep both alive
  /// for ever once the channel is gone.
  func handlerRemoved(context: ChannelHandlerContext) {
    // A connection that never became active (its connect failed): its TLS context goes back.
    exporter.release()
    self.context = nil
    deadline?.cancel()
    heartbeat?.cancel()
  }

  func channelActive(context: ChannelHandlerContext) {
    noteRemote(context)
    startHandshakeDeadline(context)
    context.fireChannelActive()
  }

  /// Names the remote address in the log lines, once the channel has one.
  private func noteRemote(_ context: ChannelHandlerContext) {
    guard logger[metadataKey: "remote"] == nil, let address = context.channel.remoteAddress
    else { return }
    var host = address.ipAddress ?? "?"
    // An IPv4 peer on the dual-stack listener: as the user knows it.
    if host.hasPrefix("::ffff:") && host.contains(".") { host.removeFirst(7) }
    logger[metadataKey: "remote"] = "\(endpointText(host: host, port: address.port ?? 0))"
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if case TLSUserEvent.handshakeCompleted(let negotiated) = event, machine.isInTLSHandshake {
      let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate()
      let der = try? certificate?.toDERBytes()
      if let der { peerCertificate.record(der) }
      let fingerprint = der.map { Fingerprint(sha256Of: $0) }
      let keyingMaterial = exporter.keyingMaterial(
        label: VerificationCode.exporterLabel, length: VerificationCode.keyingMaterialSize)
      perform(
        machine.tlsCompleted(peer: fingerprint, alpn: negotiated, keyingMaterial: keyingMaterial))
    }
    context.fireUserInboundEventTriggered(event)
  }

  /// For tests and the fuzzer, on a pipeline without TLS (an `EmbeddedChannel`): go on as if
  /// the TLS handshake had completed with a peer proving `fingerprint`, the session exporting
  /// `keyingMaterial`.
  func assumeTLSCompleted(
    peer fingerprint: Fingerprint,
    keyingMaterial: [UInt8] = Array(repeating: 0x4B, count: VerificationCode.keyingMaterialSize)
  ) {
    perform(
      machine.tlsCompleted(
        peer: fingerprint, alpn: WireProtocol.alpn, keyingMaterial: keyingMaterial))
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let frame = unwrapInboundIn(data)
    lastReceived = context.eventLoop.now
    guard frame.type.isControl else {
      // Session traffic goes on to the LinkMultiplexer, and only once connected.
      return perform(machine.sessionFrame(frame.type), forwarding: data)
    }
    do {
      perform(machine.received(try frame.controlMessage(), now: .now))
    } catch {
      perform(machine.errorCaught(.wire(error)))
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: Error) {
    let classified: ConnectionStateMachine.ChannelError
    switch error {
    case let wire as WireError:
      classified = .wire(wire)
    case _ where machine.isInTLSHandshake && certificateRefusal == nil:
      if let broken = handshakeInterruption(error) {
        logger.notice("TLS handshake interrupted: \(broken)")
        classified = .tlsHandshakeInterrupted(broken)
        break
      }
      let reason = handshakeFailureReason(error, refusal: nil)
      logger.notice("TLS handshake failed: \(reason)")
      classified = .tlsHandshake(reason)
    case _ where machine.isInTLSHandshake:
      let reason = handshakeFailureReason(error, refusal: certificateRefusal)
      logger.notice("TLS handshake failed: \(reason)")
      classified = .tlsHandshake(reason)
    case NIOSSLError.uncleanShutdown:
      classified = .uncleanShutdown
    default:
      classified = .other(connectionBreak(error) ?? ErrorWords.describe(error))
    }
    perform(machine.errorCaught(classified))
  }

  func channelInactive(context: ChannelHandlerContext) {
    // A handshake that never completed: its TLS context goes back all the same.
    exporter.release()
    perform(machine.channelInactive(now: .now))
    budget.endReason = machine.end?.description
    if !wasConnected {
      logger.debug(
        "connection closed before it was connected: \(machine.end?.description ?? "closed")")
    }
    onInvitationWithdrawn = nil
    onInvite = nil
    onPeerKnown = nil
    onVerificationCode = nil
    context.fireChannelInactive()
  }

  // MARK: Decisions (event loop only)

  /// Reveals this advertiser's verification nonce for the pending invitation (REVEAL), once:
  /// the inviter can then show the code while the application decides.
  func reveal() {
    perform(machine.reveal())
  }

  /// Accepts the pending invitation; false if it is no longer pending.
  func accept() -> Bool {
    let actions = machine.accept()
    guard !actions.isEmpty else { return false }
    onInvitationWithdrawn = nil
    perform(actions)
    return true
  }

  /// Declines the pending invitation (or refuses an incoming one) and closes.
  func decline(_ code: ControlMessage.DeclineCode, reason: String) {
    logger.info("declining the invitation: \(reason)")
    perform(machine.decline(code, reason: reason))
  }

  /// The inviter gives up: sends CANCEL and closes, failing the answer with `error`.
  func withdraw(_ error: InvitationError) {
    perform(machine.withdraw(error))
  }

  /// Closes a connected link with GOODBYE; the link is reported ended at once.
  func disconnect(reason: String) {
    perform(machine.disconnect(reason: reason), closingGently: true)
  }

  /// Closes a link another link between the same two peers replaces (GOODBYE `superseded`);
  /// the link is reported ended at once.
  func disconnect(superseded: Supersession) {
    perform(machine.disconnect(superseded: superseded), closingGently: true)
  }

  /// The longest a link closed on purpose waits, after its GOODBYE, for the peer to close its
  /// side (``closeGently(_:)``).
  static let lingerLimit: TimeAmount = .seconds(2)

  /// Closes after a GOODBYE without losing it: the output is closed once everything queued
  /// before it is written (TLS close_notify, then FIN), and the whole channel when the peer
  /// closes its side, or after ``lingerLimit``. Closing at once would drop the writes still
  /// queued (a RESET saying why a transfer stopped) and, with the peer's frames unread on the
  /// socket, make the kernel answer with a TCP reset, which can make the peer drop what it had
  /// not read yet.
  private func closeGently(_ context: ChannelHandlerContext) {
    let channel = context.channel
    let timer = context.eventLoop.scheduleTask(in: Self.lingerLimit) {
      channel.close(promise: nil)
    }
    channel.closeFuture.whenComplete { _ in timer.cancel() }
    context.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
  }

  /// Closes the link because the peer broke the protocol or one of its limits: GOODBYE with
  /// code 1 and `reason`, then close.
  func closeForViolation(_ reason: String) {
    logger.notice("closing the link: \(reason)")
    perform(machine.violation(reason))
  }

  // MARK: Performing actions

  private func perform(
    _ actions: [ConnectionStateMachine.Action], forwarding data: NIOAny? = nil,
    closingGently: Bool = false
  ) {
    guard let context else { return }
    for action in actions {
      switch action {
      case .send(let message):
        send(message, context: context)
      case .close:
        if closingGently { closeGently(context) } else { context.close(promise: nil) }
      case .cancelDeadline:
        deadline?.cancel()
        deadline = nil
      case .scheduleExpiry(let delay):
        deadline = context.eventLoop.assumeIsolated().scheduleTask(
          in: .nanoseconds(delay.timeAmount.nanoseconds)
        ) { [weak self] in
          guard let self else { return }
          self.perform(self.machine.invitationExpired())
        }
      case .startHeartbeat:
        startHeartbeat(context)
      case .stopHeartbeat:
        heartbeat?.cancel()
        heartbeat = nil
      case .markConnected:
        budget.connected = true
        wasConnected = true
        logger.info("connected")
      case .forward:
        if let data { context.fireChannelRead(data) }
      case .pong(let value):
        // A peer that pings without reading our answers would make them pile up here.
        guard let written = budget.reply(on: context.eventLoop) else {
          return closeForViolation(
            LinkLimitExceeded(
              "the peer does not read what it is sent (\(budget.maximumQueuedReplies) replies "
                + "wait)"
            ).description)
        }
        send(.pong(value), context: context, promise: written)
      case .peerKnown(let peer):
        logger[metadataKey: "peer"] = "\(peer.displayName) \(peer.fingerprint.shortDescription)"
        onPeerKnown?(peer)
      case .verificationCode(let code):
        if let peer = machine.peer { onVerificationCode?(peer, code) }
      case .invite(let invite):
        logger[metadataKey: "peer"] =
          "\(invite.peer.displayName) \(invite.peer.fingerprint.shortDescription)"
        logger.debug("invited")
        onInvite?(invite)
      case .answer(let result):
        switch result {
        case .success(let peer): answerPromise?.succeed(peer)
        case .failure(let error):
          logger.info("the invitation failed: \(error)")
          answerPromise?.fail(error)
        }
      case .invitationWithdrawn:
        let withdrawn = onInvitationWithdrawn
        onInvitationWithdrawn = nil
        withdrawn?()
      case .linkEnded(let end):
        logger.info("link ended: \(end)")
        budget.endReason = end.description
        let ended = onLinkEnded
        onLinkEnded = nil
        ended?(end)
      }
    }
  }

  private func startHandshakeDeadline(_ context: ChannelHandlerContext) {
    guard deadline == nil else { return }
    deadline = context.eventLoop.assumeIsolated().scheduleTask(
      in: .nanoseconds(machine.timeouts.handshake.timeAmount.nanoseconds)
    ) { [weak self] in
      guard let self else { return }
      self.perform(self.machine.handshakeDeadlinePassed())
    }
  }

  private func startHeartbeat(_ context: ChannelHandlerContext) {
    lastReceived = context.eventLoop.now
    let interval = TimeAmount.nanoseconds(machine.timeouts.heartbeatInterval.timeAmount.nanoseconds)
    // Strongly held until cancelled (on close), and only touched on this loop.
    let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
    heartbeat = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) {
      _ in
      let handler = bound.value
      let silence = bound.eventLoop.now - handler.lastReceived
      handler.perform(handler.machine.heartbeat(silentFor: .nanoseconds(silence.nanoseconds)))
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
