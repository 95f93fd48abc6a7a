import Dispatch
internal import FerryWire
import NIOCore
import NIOPosix
import Synchronization

/// Who is in the session: room for a link, adopting a link whose handshake completed, its end,
/// and what each peer's state changes say.
extension Session {
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
  func reportUnlessConnected(_ peer: PeerID, _ state: PeerState, end: LinkEnd? = nil) {
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
}
