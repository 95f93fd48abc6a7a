import Dispatch
internal import FerryWire
import NIOCore
import NIOPosix
import Synchronization

/// A group of connected peers, as in MultipeerConnectivity: owned by the local peer, holding at
/// most ``maximumPeers`` peers including itself, each connected over its own mutually
/// authenticated TLS 1.3 connection.
///
/// Peers join by invitation: ``Browser/invite(_:to:context:timeout:onVerificationCode:)`` (or
/// ``invite(host:port:expecting:context:timeout:onVerificationCode:)`` without discovery) on
/// one side, ``Invitation/accept(into:)`` on the other. Every state change
/// of every peer is reported on ``stateChanges``. A heartbeat notices a peer that vanished
/// without closing (power loss, SIGKILL, cable pulled) within ``ConnectionTimeouts/deadAfter``
/// plus one heartbeat interval.
public final class Session: Sendable {
  /// The most peers a session holds, this one included.
  public static let maximumPeers = SessionLimits.maximumPeers

  /// The identity this session authenticates with.
  public let identity: Identity
  /// This peer.
  public let myPeer: PeerID
  /// The connection timers.
  public let timeouts: ConnectionTimeouts
  /// Every peer state change, in order. Finishes after ``close()``. Several readers may wait
  /// at once (`AsyncStream`'s rule): each change goes to one of them, so one reader that wants
  /// them all must be the only one.
  public let stateChanges: AsyncStream<PeerStateChange>

  /// What one peer may make this session hold.
  public let limits: SessionLimits

  let tls: TLSContexts
  let transfers: SessionTransfers
  private let continuation: AsyncStream<PeerStateChange>.Continuation
  private let members = Mutex(SessionMembers())
  /// Peers whose last link ended on purpose (a GOODBYE, a violation) rather than being lost:
  /// a retrying send does not connect to them again.
  /// Set by ``close()``: no invitation goes out after it, and no link is adopted.
  private let closed = Atomic<Bool>(false)
  /// The number of the last wait for this end's own invitations (``invitationsSettled``).
  private let lastSettleWait = Atomic<UInt64>(0)

  /// Creates a session for `identity`, presented to peers as `displayName`.
  ///
  /// - Parameters:
  ///   - limits: What one peer may make this session hold (streams, unread bytes, offers,
  ///     files, replies); a peer beyond a limit is disconnected.
  ///   - accepting: Which incoming messages and streams are delivered; the rest are refused
  ///     without being buffered (a receiver that never reads them should not accept them).
  /// - Throws: ``PeerIDError`` when the display name is not valid.
  public convenience init(
    identity: Identity, displayName: String, timeouts: ConnectionTimeouts = .init(),
    limits: SessionLimits = .init(), accepting: IncomingTraffic = .all
  ) throws(PeerIDError) {
    try self.init(
      identity: identity, displayName: displayName, timeouts: timeouts, limits: limits,
      accepting: accepting, makeOfferExecutor: { DispatchQueue(label: "ferry.incoming-offer") })
  }

  /// A session whose incoming offers run their work on what `makeOfferExecutor` makes (tests
  /// and the fuzzer run it inline, beside an `EmbeddedChannel`).
  init(
    identity: Identity, displayName: String, timeouts: ConnectionTimeouts,
    limits: SessionLimits, accepting: IncomingTraffic,
    makeOfferExecutor: @escaping @Sendable () -> any OfferExecutor
  ) throws(PeerIDError) {
    self.identity = identity
    self.myPeer = try PeerID(displayName: displayName, fingerprint: identity.fingerprint)
    self.timeouts = timeouts
    self.limits = limits
    self.transfers = SessionTransfers(
      limits: limits, accepting: accepting, stall: timeouts.transferStall,
      makeExecutor: makeOfferExecutor)
    // A key and certificate that Identity accepted (matching P-256 pair) are valid for BoringSSL.
    self.tls = try! TLSContexts(identity: identity)
    (stateChanges, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
  }

  deinit {
    close()
  }

  /// The peers connected now.
  public var connectedPeers: [PeerID] {
    members.withLock { $0.links.values.map(\.peer) }.sorted { $0.displayName < $1.displayName }
  }

  /// Whether `peer` (by fingerprint) is connected now. Any thread.
  public func isConnected(_ peer: PeerID) -> Bool {
    members.withLock { $0.links[peer.fingerprint] != nil }
  }

  /// The certificate (DER) `peer` presented in the TLS handshake of its link, nil when it is
  /// not connected. Its SHA-256 is `peer.fingerprint`. Any thread.
  public func certificateDER(of peer: PeerID) -> [UInt8]? {
    members.withLock { $0.links[peer.fingerprint]?.link.peerCertificate.value }
  }

  /// The verification code of the link that connects `peer` now, as both ends display it; nil
  /// when `peer` is not connected. Each connection has a code of its own (a peer that
  /// reconnects has a new one). An inviter learns the code before the answer through the
  /// `onVerificationCode` of the `invite` methods; an advertiser, from
  /// ``Invitation/verificationCode``. Any thread.
  public func verificationCode(with peer: PeerID) -> VerificationCode? {
    members.withLock { $0.links[peer.fingerprint]?.verificationCode }
  }

  /// Invites a peer reachable at one of `endpoints`, tried in order until one connects. With
  /// `keepingConnected` and an exact fingerprint, a peer connected already is returned at once
  /// and keeps its link (MultipeerConnectivity's way: inviting a connected peer changes
  /// nothing); otherwise a new link replaces the old.
  func invite(
    endpoints: [(host: String, port: Int)], expecting: FingerprintPin?, context: [UInt8],
    timeout: Duration, keepingConnected: Bool = false,
    onVerificationCode: (@Sendable (PeerID, VerificationCode) -> Void)?
  ) async throws(InvitationError) -> PeerID {
    guard context.count <= ControlMessage.maximumContextSize else {
      throw .contextTooLarge(byteCount: context.count)
    }
    guard !closed.load(ordering: .acquiring) else { throw .cancelled }
    let known: Fingerprint?
    if case .exact(let fingerprint) = expecting { known = fingerprint } else { known = nil }
    guard hasRoom(for: known) else { throw .sessionFull }
    if let known {
      // Counted before the first packet leaves, under the lock `adopt` takes: a crossing
      // invitation from this peer is either adopted first (and then, when keepingConnected,
      // this one is not made) or waits, within its bounds, for this one (`.settling`).
      let connected = members.withLock { members -> PeerID? in
        if keepingConnected, let member = members.links[known] { return member.peer }
        members.beganInviting(known)
        return nil
      }
      if let connected { return connected }
    }
    defer {
      if let known {
        let settled = members.withLock { $0.endedInviting(known) }
        for accept in settled { accept.resume() }
      }
    }
    let start = ContinuousClock.now
    var lastError = InvitationError.unreachable(
      address: "", reason: "the peer has no address")
    for endpoint in endpoints {
      guard !Task.isCancelled, !closed.load(ordering: .acquiring) else { throw .cancelled }
      let remaining = timeout - (ContinuousClock.now - start)
      guard remaining > .zero else { throw .timedOut }
      do {
        return try await attempt(
          host: endpoint.host, port: endpoint.port, expecting: expecting, context: context,
          timeout: remaining, onVerificationCode: onVerificationCode)
      } catch .unreachable(let address, let reason) {
        lastError = .unreachable(address: address, reason: reason)
      }
    }
    throw lastError
  }

  /// The link to a connected peer.
  func link(to peer: PeerID) throws(TransferError) -> ConnectionLink {
    try linkAndVersion(to: peer).0
  }

  /// The link to `peer` and the protocol version agreed on it, read together (a link
  /// replaced in between would pair one link with another's version).
  ///
  /// - Throws: ``TransferError/notConnected(_:)``.
  func linkAndVersion(to peer: PeerID) throws(TransferError) -> (ConnectionLink, UInt16) {
    guard let member = members.withLock({ $0.links[peer.fingerprint] }) else {
      throw .notConnected(peer)
    }
    return (member.link, member.version)
  }

  /// Disconnects `peer` (GOODBYE, then close); its state becomes notConnected.
  public func disconnect(_ peer: PeerID) {
    let member = members.withLock { $0.links[peer.fingerprint] }
    member?.link.onHandler { $0.disconnect(reason: "disconnected") }
  }

  /// Disconnects every peer.
  public func disconnect() {
    for member in members.withLock({ Array($0.links.values) }) {
      member.link.onHandler { $0.disconnect(reason: "disconnected") }
    }
  }

  /// Disconnects every peer and finishes ``stateChanges``, ``messages`` and ``incomingStreams``;
  /// invitations made afterwards fail with ``InvitationError/cancelled``.
  public func close() {
    closed.store(true, ordering: .releasing)
    // Accepts waiting for this end's own invitations go on, and find the session closed.
    for waiter in members.withLock({ $0.stopAllSettling() }) { waiter.resume() }
    disconnect()
    continuation.finish()
    transfers.finish()
  }

  /// ``close()``, then waits (at most `timeout`) until every connection has closed, so that what
  /// was sent last (a RESET, the last FILE_ACKs, the GOODBYE) has left before, say, the process
  /// exits. Any task.
  public func closeAndWait(timeout: Duration = .seconds(2)) async {
    let channels = members.withLock { $0.links.values.map(\.link.channel) }
    close()
    await Self.waitForClose(of: channels, until: .now + timeout)
  }

  /// Waits (at most `timeout`) until every peer connected now has disconnected, without
  /// disconnecting anyone: for example until a sender hangs up once it has its last
  /// acknowledgements. Peers that connect meanwhile are not waited for. Any task.
  public func waitUntilDisconnected(timeout: Duration) async {
    let channels = members.withLock { $0.links.values.map(\.link.channel) }
    await Self.waitForClose(of: channels, until: .now + timeout)
  }

  /// Waits until each of `channels` has closed, or `deadline` passes.
  private static func waitForClose(
    of channels: [any Channel], until deadline: ContinuousClock.Instant
  ) async {
    for channel in channels {
      let left = deadline - .now
      guard left > .zero else { return }
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let once = Once()
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(left.timeAmount.nanoseconds)) {
          if once.claim() { continuation.resume() }
        }
        channel.closeFuture.whenComplete { _ in
          timer.cancel()
          if once.claim() { continuation.resume() }
        }
      }
    }
  }

  // MARK: Internals

  /// Whether a link to `peer` fits: a peer already connected reconnects in its own place (its
  /// new link replaces the old, which may not have noticed it is dead yet).
  func hasRoom(for peer: Fingerprint?) -> Bool {
    members.withLock { members in
      if let peer, members.links[peer] != nil { return true }
      return members.links.count + 1 < Self.maximumPeers
    }
  }

  /// What became of a link whose handshake completed.
  enum Adoption {
    /// It is the peer's link now (any older one is disconnected).
    case adopted
    /// The peer is connected already by the link both ends keep when they invited each other
    /// at once; this one was closed.
    case alreadyConnected
    /// The session is full; the link was closed.
    case full
    /// Only for a link the peer invited, when `mayWait`: this end is inviting the same peer,
    /// and its own invitation is the one both ends keep if it is accepted. Nothing changed:
    /// adopt again (without waiting) once ``invitationsSettled(to:until:wake:)`` returns.
    case settling
    /// The session was closed; the caller closes the link.
    case closed
  }

  /// Adds a link whose handshake just completed; on the link's event loop. `invitedHere`:
  /// this end invited it. On `.full` the caller closes the link (declining, as advertiser).
  ///
  /// A peer already connected by an older link is reconnecting: the new link replaces the old
  /// (which may not have noticed it is dead yet). Except when both ends invited each other at
  /// the same moment (host and guest): each then holds two links, adopted in opposite orders,
  /// and "newest wins" would close both. So when the older link goes the other way and is
  /// alive (it heard from the peer within two heartbeat intervals, as a dead one has not),
  /// both ends settle it the same way: the link invited by the peer with the smaller
  /// fingerprint stays.
  ///
  /// So that the kept link is not the second one adopted — replacing a link the application
  /// may already use, and failing what is in flight on it — the end with the smaller
  /// fingerprint, asked with `mayWait`, does not adopt a link the peer invited while its own
  /// invitations of that peer are under way (`.settling`): the caller waits once, within the
  /// bounds of ``invitationsSettled(to:until:wake:)``, and asks again without `mayWait`. Its own
  /// accepted by then, its link is kept and the peer's is closed after ACCEPT; otherwise the
  /// peer's is adopted as usual. The end with the larger fingerprint never waits, so the two
  /// never wait for each other.
  func adopt(
    _ peer: PeerID, link: ConnectionLink, handler: ConnectionHandler, invitedHere: Bool,
    mayWait: Bool = false
  ) -> Adoption {
    let alive = timeouts.heartbeatInterval * 2
    let smallerHere = myPeer.fingerprint.bytes.lexicographicallyPrecedes(peer.fingerprint.bytes)
    let (outcome, previous) = members.withLock { members -> (Adoption, SessionMembers.Member?) in
      // Read under the lock close() takes after setting it: no link joins a closed session.
      if closed.load(ordering: .acquiring) { return (.closed, nil) }
      if mayWait && !invitedHere && smallerHere && members.isInviting(peer.fingerprint)
        && peer.fingerprint != myPeer.fingerprint
      {
        return (.settling, nil)
      }
      if let existing = members.links[peer.fingerprint] {
        let crossed =
          existing.invitedHere != invitedHere && existing.link.activity.heard(within: alive)
          && peer.fingerprint != myPeer.fingerprint
        // The link to keep was invited by the smaller fingerprint: here if it is ours.
        if crossed && invitedHere != smallerHere { return (.alreadyConnected, nil) }
      } else if members.links.count + 1 >= Self.maximumPeers {
        return (.full, nil)
      }
      let member = SessionMembers.Member(
        peer: peer, link: link, invitedHere: invitedHere,
        version: handler.protocolVersion ?? 1, verificationCode: handler.verificationCode)
      let previous = members.links[peer.fingerprint]
      members.add(member)
      // A replaced link's peer stayed connected: said once. The accepting end says connecting
      // first, as the inviting end did when the handshake began (as MultipeerConnectivity
      // does). Said under the lock, as every change of this peer's membership is, so that no
      // other link's report can come in between.
      if previous == nil {
        if !invitedHere {
          continuation.yield(PeerStateChange(peer: peer, state: .connecting))
        }
        continuation.yield(PeerStateChange(peer: peer, state: .connected))
      }
      return (.adopted, previous)
    }
    switch outcome {
    case .full, .settling, .closed:
      return outcome
    case .alreadyConnected:
      FerryLogging.logger.info(
        "kept the link invited by the smaller fingerprint", metadata: ["peer": "\(peer)"])
      return .alreadyConnected
    case .adopted:
      break
    }
    previous?.link.onHandler { $0.disconnect(superseded: .replaced) }
    handler.onLinkEnded = { [weak self] end in
      // On the loop, in the turn that ended the link: recorded before any transfer on it fails.
      self?.linkEnded(peer, link: link, end: end)
    }
    attachTransfers(of: link, to: peer, version: handler.protocolVersion ?? 1)
    return .adopted
  }

  func report(_ peer: PeerID, _ state: PeerState, end: LinkEnd? = nil) {
    continuation.yield(PeerStateChange(peer: peer, state: state, end: end))
  }

  /// Reports a second link's progress only while the peer has no link: a peer connected by
  /// one link is not "connecting" or "not connected" because another was tried.
  private func reportUnlessConnected(_ peer: PeerID, _ state: PeerState, end: LinkEnd? = nil) {
    // Checked and said under one lock: an adoption cannot slip in between.
    members.withLock { members in
      if members.links[peer.fingerprint] == nil { report(peer, state, end: end) }
    }
  }

  /// Returns once this end has no invitation to `peer` under way (at once when it has none),
  /// or earlier: at `deadline`, when the session closes, when the calling task is cancelled, or
  /// when the function handed to `wake` is called (from any thread, any number of times).
  /// Any task.
  func invitationsSettled(
    to peer: Fingerprint, until deadline: ContinuousClock.Instant,
    wake: (@escaping @Sendable () -> Void) -> Void
  ) async {
    let id = lastSettleWait.wrappingAdd(1, ordering: .relaxed).newValue
    // Set before the lock is taken: a stop that comes before the wait registers keeps it from
    // registering (checked under the same lock), so no stop is lost.
    let stopped = Atomic<Bool>(false)
    let stop: @Sendable () -> Void = { [weak self] in
      stopped.store(true, ordering: .releasing)
      self?.members.withLock { $0.stopSettling(peer, id: id) }?.resume()
    }
    wake(stop)
    let timer = Task {
      guard (try? await Task.sleep(until: deadline)) != nil else { return }
      stop()
    }
    defer { timer.cancel() }
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let waiting = members.withLock { members in
          !closed.load(ordering: .acquiring) && !stopped.load(ordering: .acquiring)
            && !Task.isCancelled && .now < deadline && members.settle(peer, id: id, continuation)
        }
        if !waiting { continuation.resume() }
      }
    } onCancel: {
      stop()
    }
  }

  /// Why `peer`'s last link ended, while it has no link (nil: it has one, or never had).
  func lastLinkEnd(of peer: PeerID) -> LinkEnd? {
    members.withLock { $0.ended[peer.fingerprint] }
  }

  private func linkEnded(_ peer: PeerID, link: ConnectionLink, end: LinkEnd) {
    // Removed, its end kept and said under one lock, so that a new link's connected cannot
    // come first, and a retrying send that finds the peer gone finds why too.
    members.withLock { members in
      guard members.links[peer.fingerprint]?.link === link else { return }
      members.remove(peer.fingerprint, ended: end)
      continuation.yield(PeerStateChange(peer: peer, state: .notConnected, end: end))
    }
  }

  private func attempt(
    host: String, port: Int, expecting: FingerprintPin?, context: [UInt8], timeout: Duration,
    onVerificationCode: (@Sendable (PeerID, VerificationCode) -> Void)?
  ) async throws(InvitationError) -> PeerID {
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let answer = loop.makePromise(of: PeerID.self)
    let linkBox = LinkBox()
    let tls = self.tls
    let name = myPeer.displayName
    let fingerprint = myPeer.fingerprint
    let timeouts = self.timeouts
    let connectTimeout = min(timeout, timeouts.handshake)
    let bootstrap = ClientBootstrap(group: loop)
      .connectTimeout(.nanoseconds(connectTimeout.timeAmount.nanoseconds))
      .channelInitializer { [weak self] channel in
        do {
          let budget = LinkBudget()
          let handler = ConnectionHandler(
            role: .inviter(context: context, timeout: timeout, answer: answer),
            localName: name, localFingerprint: fingerprint, timeouts: timeouts, budget: budget)
          handler.onPeerKnown = { peer in self?.reportUnlessConnected(peer, .connecting) }
          if let onVerificationCode {
            handler.onVerificationCode = { peer, code in onVerificationCode(peer, code) }
          }
          let link = try ConnectionPipeline.install(
            on: channel,
            tls: try tls.clientHandler(
              expecting: expecting, exporter: handler.exporter,
              onRefusal: handler.certificateRefused),
            handler: handler, budget: budget, isInviter: true)
          linkBox.link.withLock { $0 = link }
          return channel.eventLoop.makeSucceededVoidFuture()
        } catch {
          return channel.eventLoop.makeFailedFuture(error)
        }
      }
    do {
      _ = try await bootstrap.connect(host: host, port: port).get()
    } catch {
      let failure = InvitationError.unreachable(
        address: endpointText(host: host, port: port), reason: connectFailureReason(error))
      answer.fail(failure)
      throw failure
    }
    guard let link = linkBox.link.withLock({ $0 }) else {
      answer.fail(InvitationError.connectionFailed(reason: "no connection handler"))
      throw .connectionFailed(reason: "no connection handler")
    }
    // Adopt on the event loop, in the same turn as the ACCEPT, so no event falls in between.
    let adopted = answer.futureResult.flatMapThrowing { [weak self] peer -> PeerID in
      let handler = try link.channel.pipeline.syncOperations.handler(type: ConnectionHandler.self)
      guard let self else { throw InvitationError.cancelled }
      switch self.adopt(peer, link: link, handler: handler, invitedHere: true) {
      case .adopted:
        return peer
      case .alreadyConnected, .settling:
        // The peer's own invitation of this end is the link both keep (`.settling` is only
        // for links the peer invited).
        handler.disconnect(superseded: .keptPeersLink)
        return peer
      case .full:
        handler.disconnect(reason: "the session is full")
        throw InvitationError.sessionFull
      case .closed:
        handler.disconnect(reason: "the session was closed")
        throw InvitationError.cancelled
      }
    }
    let timer = loop.scheduleTask(in: .nanoseconds(timeout.timeAmount.nanoseconds)) {
      link.onHandler { handler in handler.withdraw(InvitationError.timedOut) }
    }
    defer { timer.cancel() }
    do {
      return try await withTaskCancellationHandler {
        try await adopted.get()
      } onCancel: {
        link.onHandler { handler in handler.withdraw(InvitationError.cancelled) }
      }
    } catch let error as InvitationError {
      // A peer reported as connecting must be reported as not connected.
      if let peer = await link.withHandler({ $0.remote }) {
        // The connection that failed was never a link: lost, as far as retrying goes.
        reportUnlessConnected(peer, .notConnected, end: .lost(words: error.description))
      }
      throw error
    } catch {
      throw .connectionFailed(reason: ErrorWords.describe(error))
    }
  }
}
