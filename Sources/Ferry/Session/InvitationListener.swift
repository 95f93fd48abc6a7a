import NIOCore
import NIOPosix
import Synchronization

/// The TLS listener behind an ``Advertiser``: accepts connections, runs the handshake under
/// its deadline, and yields authenticated ``Invitation``s.
///
/// Limits against hostile or broken clients: at most ``maximumHandshakes`` connections may be
/// in their handshake at once, ``maximumHandshakesPerAddress`` of them from one IP address
/// (an IPv6 /64 counts as one address: ``AddressGroup``; more are closed at accept); every handshake has ``ConnectionTimeouts/handshake`` to deliver
/// its INVITE; at most `maximumPending` invitations wait for an answer, `maximumPendingPerAddress`
/// of them from one address (more are declined as busy), so that one host cannot fill the
/// prompt's queue or keep every other sender busy.
///
/// Only an admitted invitation gets this end's verification nonce (REVEAL), which gives the
/// inviter the connection's code: one declined as busy does not. And once
/// ``maximumUnansweredReveals`` invitations were withdrawn after their REVEAL, unanswered,
/// within ``unansweredRevealWindow``, every invitation from a key this machine does not know is
/// declined as busy until that window has room again (known keys are still asked about): a man in the middle that withdraws each invitation whose code does not suit
/// it gets a handful of tries, not a million (docs/SECURITY.md, "The verification code").
final class InvitationListener: Sendable {
  /// Connections allowed in their handshake at once.
  static let maximumHandshakes = 64
  /// Connections from one IP address allowed in their handshake at once.
  static let maximumHandshakesPerAddress = 16
  /// Invitations withdrawn (or expired) after their REVEAL, unanswered, that are tolerated
  /// within ``unansweredRevealWindow``.
  static let maximumUnansweredReveals = 8
  /// How long an invitation withdrawn after its REVEAL counts against
  /// ``maximumUnansweredReveals``.
  static let unansweredRevealWindow: Duration = .seconds(600)

  let invitations: AsyncStream<Invitation>
  private let queue = InvitationQueue()
  private let identity: Identity
  private let displayName: String
  private let tls: TLSContexts
  private let timeouts: ConnectionTimeouts
  private let knownPeers: KnownPeers?
  private let maximumPending: Int
  private let maximumPendingPerAddress: Int
  private let state = Mutex(State())

  private struct State {
    var channel: Channel?
    var handshaking = 0
    var pending = 0
    var handshakingFrom: [String: Int] = [:]
    var pendingFrom: [String: Int] = [:]
    var stopped = false
    /// When invitations were withdrawn after their REVEAL, unanswered (the recent ones).
    var unansweredReveals: [ContinuousClock.Instant] = []
  }

  init(
    identity: Identity, displayName: String, timeouts: ConnectionTimeouts,
    knownPeers: KnownPeers?, maximumPending: Int, maximumPendingPerAddress: Int = 2
  ) {
    self.identity = identity
    self.displayName = displayName
    self.tls = try! TLSContexts(identity: identity)
    self.timeouts = timeouts
    self.knownPeers = knownPeers
    self.maximumPending = maximumPending
    self.maximumPendingPerAddress = maximumPendingPerAddress
    invitations = queue.stream
  }

  /// Binds `port` (0: any) on every address, IPv6 and IPv4, and starts accepting.
  ///
  /// - Returns: The bound port.
  /// - Throws: The bind error (port in use, not permitted).
  func start(port: UInt16) async throws -> UInt16 {
    let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.backlog, value: 256)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { [weak self] channel in
        guard let self else { return channel.close() }
        return self.initialize(channel)
      }
    let channel: Channel
    do {
      channel = try await bootstrap.bind(host: "::", port: Int(port)).get()
    } catch {
      // No IPv6 on this host: IPv4 only.
      channel = try await bootstrap.bind(host: "0.0.0.0", port: Int(port)).get()
    }
    let stopped = state.withLock { state in
      if !state.stopped { state.channel = channel }
      return state.stopped
    }
    if stopped { try? await channel.close() }
    return UInt16(channel.localAddress?.port ?? Int(port))
  }

  /// Stops accepting; pending invitations stay answerable until their connection ends.
  func stop() {
    let channel = state.withLock { state in
      state.stopped = true
      defer { state.channel = nil }
      return state.channel
    }
    channel?.close(promise: nil)
    queue.finish()
  }

  private func initialize(_ channel: Channel) -> EventLoopFuture<Void> {
    let address = AddressGroup.key(of: channel.remoteAddress)
    let admitted = state.withLock { state in
      guard state.handshaking < Self.maximumHandshakes,
        state.handshakingFrom[address, default: 0] < Self.maximumHandshakesPerAddress
      else { return false }
      state.handshaking += 1
      state.handshakingFrom[address, default: 0] += 1
      return true
    }
    guard admitted else {
      FerryLogging.logger.notice(
        "turned away a connection from \(address): too many TLS handshakes under way")
      return channel.close()
    }
    let handshakeDone = Atomic<Bool>(false)
    let finishHandshake: @Sendable () -> Void = { [weak self] in
      if !handshakeDone.exchange(true, ordering: .acquiringAndReleasing) {
        self?.state.withLock { state in
          state.handshaking -= 1
          state.handshakingFrom[address, default: 1] -= 1
          if state.handshakingFrom[address] == 0 { state.handshakingFrom[address] = nil }
        }
      }
    }
    channel.closeFuture.whenComplete { _ in finishHandshake() }
    do {
      let budget = LinkBudget()
      let handler = ConnectionHandler(
        role: .advertiser, localName: displayName, localFingerprint: identity.fingerprint,
        timeouts: timeouts, budget: budget)
      let link = try ConnectionPipeline.install(
        on: channel, tls: try tls.serverHandler(exporter: handler.exporter), handler: handler,
        budget: budget, isInviter: false)
      let loop = channel.eventLoop
      handler.onInvite = { [weak self, weak handler] invite in
        finishHandshake()
        guard let self, let handler else { return }
        self.received(invite, from: address, link: link, handler: handler, on: loop)
      }
      return channel.eventLoop.makeSucceededVoidFuture()
    } catch {
      return channel.eventLoop.makeFailedFuture(error)
    }
  }

  /// An INVITE arrived (on the connection's event loop, `loop`). What is known of the peer is
  /// looked up in peers.json on the blocking pool, never on the loop; the invitation is queued
  /// once it is known, unless the inviter withdrew meanwhile.
  private func received(
    _ invite: ConnectionHandler.IncomingInvite, from address: String, link: ConnectionLink,
    handler: ConnectionHandler, on loop: EventLoop
  ) {
    let refusal = state.withLock { state -> String? in
      guard !state.stopped, state.pending < maximumPending,
        state.pendingFrom[address, default: 0] < maximumPendingPerAddress
      else { return "too many invitations are pending" }
      state.pending += 1
      state.pendingFrom[address, default: 0] += 1
      return nil
    }
    if let refusal {
      // Without REVEAL: the inviter learns no code from an invitation nobody is asked about.
      FerryLogging.logger.notice("declined an invitation from \(address) as busy: \(refusal)")
      handler.decline(.busy, reason: refusal)
      return
    }
    let peer = invite.peer
    let lookup: EventLoopFuture<KnownPeers.Status>
    if let knownPeers {
      lookup = NIOThreadPool.singleton.runIfActive(eventLoop: loop) {
        (try? knownPeers.status(of: peer)) ?? .new
      }
    } else {
      lookup = loop.makeSucceededFuture(KnownPeers.Status.new)
    }
    lookup.assumeIsolated().whenComplete { [weak self, weak handler] result in
      guard let self else { return }
      guard let handler, handler.isPendingDecision else {
        // Withdrawn (or the link ended) while the status was looked up: nothing to ask about.
        self.releasePending(from: address)
        return
      }
      let status = (try? result.get()) ?? .new
      if case .known = status {
        // A key this machine knows is not a man in the middle's (it cannot present it).
      } else if self.tooManyUnansweredReveals() {
        // Without REVEAL: the inviter learns no code from an invitation nobody is asked about.
        self.releasePending(from: address)
        FerryLogging.logger.notice(
          "declined an invitation from \(address) as busy: too many withdrawn unanswered")
        handler.decline(
          .busy, reason: "too many invitations were withdrawn unanswered; try again later")
        return
      }
      self.enqueue(invite, status: status, from: address, link: link, handler: handler)
    }
  }

  /// Whether ``maximumUnansweredReveals`` invitations were withdrawn after their REVEAL,
  /// unanswered, within ``unansweredRevealWindow``: then only known keys are asked about.
  private func tooManyUnansweredReveals() -> Bool {
    let now = ContinuousClock.now
    return state.withLock { state in
      state.unansweredReveals.removeAll { now - $0 > Self.unansweredRevealWindow }
      return state.unansweredReveals.count >= Self.maximumUnansweredReveals
    }
  }

  /// Gives back a pending slot of `address`.
  private func releasePending(from address: String) {
    state.withLock { state in
      state.pending -= 1
      state.pendingFrom[address, default: 1] -= 1
      if state.pendingFrom[address] == 0 { state.pendingFrom[address] = nil }
    }
  }

  /// Makes the invitation and hands it to the application (on the connection's event loop).
  private func enqueue(
    _ invite: ConnectionHandler.IncomingInvite, status: KnownPeers.Status, from address: String,
    link: ConnectionLink, handler: ConnectionHandler
  ) {
    let invitation = Invitation(
      peer: invite.peer, status: status, verificationCode: invite.verificationCode,
      localFingerprint: identity.fingerprint, context: invite.context,
      expiresAt: invite.expiresAt,
      link: link, knownPeers: knownPeers
    ) { [weak self] in
      self?.releasePending(from: address)
    }
    handler.onInvitationWithdrawn = { [weak self, queue] in
      // Withdrawn before the application took it: drop it now, context and all.
      queue.remove(invitation)
      if invitation.isPending {
        // Withdrawn or expired after its REVEAL, and nobody answered it.
        self?.state.withLock { state in
          state.unansweredReveals.append(.now)
          if state.unansweredReveals.count > 4 * Self.maximumUnansweredReveals {
            state.unansweredReveals.removeFirst()
          }
        }
      }
      invitation.withdrawn()
    }
    // The inviter learns the code now, while this end's application is asked.
    handler.reveal()
    queue.push(invitation)
  }
}
