import Dispatch
internal import FerryWire
import NIOCore
import NIOPosix
import Synchronization

/// How links join a ``Session``: inviting a peer at its addresses (a connection to each in turn,
/// until one is adopted), adopting a link whose handshake completed, and the rule both ends
/// follow when they invite each other at once (one of them waits for its own invitation:
/// ``invitationsSettled(to:until:in:wake:)``). The session holds one; its members, its state
/// changes and whether it is closed stay the session's, handed to each call.
final class SessionConnector: Sendable {
  /// This end's TLS contexts (its identity's key and certificate).
  let tls: TLSContexts
  /// The number of the last wait for this end's own invitations
  /// (``invitationsSettled(to:until:in:wake:)``).
  let lastSettleWait = Atomic<UInt64>(0)

  init(tls: TLSContexts) {
    self.tls = tls
  }

  // MARK: Inviting

  /// Invites a peer reachable at one of `endpoints` into `session`, tried in order until one
  /// connects. With `keepingConnected` and an exact fingerprint, a peer connected already is
  /// returned at once and keeps its link (MultipeerConnectivity's way: inviting a connected peer
  /// changes nothing); otherwise a new link replaces the old.
  func invite(
    endpoints: [(host: String, port: Int)], expecting: FingerprintPin?, context: [UInt8],
    timeout: Duration, keepingConnected: Bool = false,
    onVerificationCode: (@Sendable (PeerID, VerificationCode) -> Void)?,
    into session: Session
  ) async throws(InvitationError) -> PeerID {
    guard context.count <= ControlMessage.maximumContextSize else {
      throw .contextTooLarge(byteCount: context.count)
    }
    guard !session.closed.load(ordering: .acquiring) else { throw .cancelled }
    let known: Fingerprint?
    if case .exact(let fingerprint) = expecting { known = fingerprint } else { known = nil }
    guard session.hasRoom(for: known) else { throw .sessionFull }
    if let known {
      // Counted before the first packet leaves, under the lock `adopt` takes: a crossing
      // invitation from this peer is either adopted first (and then, when keepingConnected,
      // this one is not made) or waits, within its bounds, for this one (`.settling`).
      let connected = session.members.withLock { members -> PeerID? in
        if keepingConnected, let member = members.links[known] { return member.peer }
        members.beganInviting(known)
        return nil
      }
      if let connected { return connected }
    }
    defer {
      if let known {
        let settled = session.members.withLock { $0.endedInviting(known) }
        for accept in settled { accept.resume() }
      }
    }
    let start = ContinuousClock.now
    var lastError = InvitationError.unreachable(
      address: "", reason: "the peer has no address")
    for endpoint in endpoints {
      guard !Task.isCancelled, !session.closed.load(ordering: .acquiring) else { throw .cancelled }
      let remaining = timeout - (ContinuousClock.now - start)
      guard remaining > .zero else { throw .timedOut }
      do {
        return try await attempt(
          host: endpoint.host, port: endpoint.port, expecting: expecting, context: context,
          timeout: remaining, onVerificationCode: onVerificationCode, into: session)
      } catch .unreachable(let address, let reason) {
        lastError = .unreachable(address: address, reason: reason)
      }
    }
    throw lastError
  }

  private func attempt(
    host: String, port: Int, expecting: FingerprintPin?, context: [UInt8], timeout: Duration,
    onVerificationCode: (@Sendable (PeerID, VerificationCode) -> Void)?,
    into session: Session
  ) async throws(InvitationError) -> PeerID {
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let answer = loop.makePromise(of: PeerID.self)
    let linkBox = LinkBox()
    let tls = self.tls
    let name = session.myPeer.displayName
    let fingerprint = session.myPeer.fingerprint
    let timeouts = session.timeouts
    let connectTimeout = min(timeout, timeouts.handshake)
    let bootstrap = ClientBootstrap(group: loop)
      .connectTimeout(.nanoseconds(connectTimeout.timeAmount.nanoseconds))
      .channelInitializer { [weak session] channel in
        do {
          let budget = LinkBudget()
          let handler = ConnectionHandler(
            role: .inviter(context: context, timeout: timeout, answer: answer),
            localName: name, localFingerprint: fingerprint, timeouts: timeouts, budget: budget)
          handler.onPeerKnown = { peer in session?.reportUnlessConnected(peer, .connecting) }
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
    let adopted = answer.futureResult.flatMapThrowing { [weak session] peer -> PeerID in
      let handler = try link.channel.pipeline.syncOperations.handler(type: ConnectionHandler.self)
      guard let session else { throw InvitationError.cancelled }
      switch session.adopt(peer, link: link, handler: handler, invitedHere: true) {
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
        session.reportUnlessConnected(peer, .notConnected, end: .lost(words: error.description))
      }
      throw error
    } catch {
      throw .connectionFailed(reason: ErrorWords.describe(error))
    }
  }

  // MARK: Adopting

  /// Adds a link whose handshake just completed to `session`; on the link's event loop.
  /// `invitedHere`: this end invited it. On `.full` the caller closes the link (declining, as
  /// advertiser).
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
  /// bounds of ``invitationsSettled(to:until:in:wake:)``, and asks again without `mayWait`. Its
  /// own accepted by then, its link is kept and the peer's is closed after ACCEPT; otherwise the
  /// peer's is adopted as usual. The end with the larger fingerprint never waits, so the two
  /// never wait for each other.
  func adopt(
    _ peer: PeerID, link: ConnectionLink, handler: ConnectionHandler, invitedHere: Bool,
    mayWait: Bool, into session: Session
  ) -> Session.Adoption {
    let myPeer = session.myPeer
    let alive = session.timeouts.heartbeatInterval * 2
    let smallerHere = myPeer.fingerprint.bytes.lexicographicallyPrecedes(peer.fingerprint.bytes)
    let (outcome, previous) = session.members.withLock {
      members -> (Session.Adoption, SessionMembers.Member?) in
      // Read under the lock close() takes after setting it: no link joins a closed session.
      if session.closed.load(ordering: .acquiring) { return (.closed, nil) }
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
      } else if members.links.count + 1 >= Session.maximumPeers {
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
          session.continuation.yield(PeerStateChange(peer: peer, state: .connecting))
        }
        session.continuation.yield(PeerStateChange(peer: peer, state: .connected))
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
    handler.onLinkEnded = { [weak session] end in
      // On the loop, in the turn that ended the link: recorded before any transfer on it fails.
      session?.linkEnded(peer, link: link, end: end)
    }
    session.attachTransfers(of: link, to: peer, version: handler.protocolVersion ?? 1)
    return .adopted
  }

  /// Returns once this end has no invitation to `peer` under way in `session` (at once when it
  /// has none), or earlier: at `deadline`, when the session closes, when the calling task is
  /// cancelled, or when the function handed to `wake` is called (from any thread, any number of
  /// times). Any task.
  func invitationsSettled(
    to peer: Fingerprint, until deadline: ContinuousClock.Instant, in session: Session,
    wake: (@escaping @Sendable () -> Void) -> Void
  ) async {
    let id = lastSettleWait.wrappingAdd(1, ordering: .relaxed).newValue
    // Set before the lock is taken: a stop that comes before the wait registers keeps it from
    // registering (checked under the same lock), so no stop is lost.
    let stopped = Atomic<Bool>(false)
    let stop: @Sendable () -> Void = { [weak session] in
      stopped.store(true, ordering: .releasing)
      session?.members.withLock { $0.stopSettling(peer, id: id) }?.resume()
    }
    wake(stop)
    let timer = Task {
      guard (try? await Task.sleep(until: deadline)) != nil else { return }
      stop()
    }
    defer { timer.cancel() }
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let waiting = session.members.withLock { members in
          !session.closed.load(ordering: .acquiring) && !stopped.load(ordering: .acquiring)
            && !Task.isCancelled && .now < deadline && members.settle(peer, id: id, continuation)
        }
        if !waiting { continuation.resume() }
      }
    } onCancel: {
      stop()
    }
  }
}
