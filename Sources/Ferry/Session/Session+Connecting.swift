import Dispatch
internal import FerryWire
import NIOCore
import NIOPosix
import Synchronization

/// Inviting a peer at its addresses: a connection to each in turn, until one is adopted.
extension Session {
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
