import Synchronization

/// An invitation received by an ``Advertiser``: who is asking (authenticated by TLS), what
/// Ferry knows of them, the code to compare, and the inviter's context. Answer it with
/// ``accept(into:)`` or ``decline(reason:)``; an unanswered invitation expires when the inviter
/// stops waiting.
public final class Invitation: Sendable, CustomStringConvertible {
  /// The inviting peer: its display name and the fingerprint of the certificate it proved.
  public let peer: PeerID
  /// Known, new, or a known name with a changed key (see ``KnownPeers/Status``).
  public let status: KnownPeers.Status
  /// The code both ends show for this connection (the inviter learns it as this end is asked,
  /// whatever the answer).
  public let verificationCode: VerificationCode
  /// The inviter's context (at most 64 KiB).
  public let context: [UInt8]
  /// When the inviter stops waiting.
  public let expiresAt: ContinuousClock.Instant

  private let link: ConnectionLink
  private let knownPeers: KnownPeers?
  private let localFingerprint: Fingerprint
  private let answered = Atomic<Bool>(false)
  private let onFinished: @Sendable () -> Void
  /// Ends an accept's wait for this end's own invitation of the peer (set while it waits), and
  /// whether the inviter withdrew (so that a wait that begins after the withdrawal ends at
  /// once).
  private let hold = Mutex<(stop: (@Sendable () -> Void)?, withdrawn: Bool)>((nil, false))

  /// How long before ``expiresAt`` an accept stops waiting for this end's own invitation of
  /// the same peer, so that the inviter still hears ACCEPT.
  static let waitMargin: Duration = .seconds(2)

  init(
    peer: PeerID, status: KnownPeers.Status, verificationCode: VerificationCode,
    localFingerprint: Fingerprint, context: [UInt8], expiresAt: ContinuousClock.Instant,
    link: ConnectionLink,
    knownPeers: KnownPeers?, onFinished: @escaping @Sendable () -> Void
  ) {
    self.peer = peer
    self.status = status
    self.verificationCode = verificationCode
    self.context = context
    self.expiresAt = expiresAt
    self.link = link
    self.knownPeers = knownPeers
    self.localFingerprint = localFingerprint
    self.onFinished = onFinished
  }

  /// The inviter's fingerprint.
  public var fingerprint: Fingerprint { peer.fingerprint }

  /// Whether the invitation still waits for an answer: false once it was accepted or declined,
  /// or the inviter withdrew it (gave up, was interrupted, timed out, or its connection broke).
  /// A prompt can poll it to stop asking about an invitation nobody is waiting on.
  public var isPending: Bool { !answered.load(ordering: .acquiring) }

  /// `name [short fingerprint], code 123 456`.
  public var description: String { "\(peer), code \(verificationCode)" }

  /// Accepts: the inviter joins `session` and both ends report it connected.
  ///
  /// When `session` is itself inviting this peer (by its whole fingerprint) and this end's
  /// fingerprint is the smaller, the two invited each other: this waits until that invitation
  /// ended — at most until 2 s before ``expiresAt``, or the inviter's withdrawal, the session's
  /// close or this task's cancellation — so that both ends keep one link, the first either
  /// reports (docs/PROTOCOL.md, "One link per pair of peers").
  ///
  /// - Parameter session: A session of the advertiser's identity.
  /// - Throws: ``InvitationError/expired`` when the inviter withdrew or timed out, or the
  ///   invitation was already answered; ``InvitationError/sessionFull`` (the invitation is then
  ///   declined as such); ``InvitationError/cancelled`` when `session` was closed, or the
  ///   calling task cancelled while this waited (declined);
  ///   ``InvitationError/authenticationFailed(reason:)`` when `session` belongs to another
  ///   identity than the advertiser's.
  public func accept(into session: Session) async throws(InvitationError) {
    guard session.identity.fingerprint == localFingerprint else {
      throw .authenticationFailed(reason: "the session's identity is not the advertiser's")
    }
    guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { throw .expired }
    defer { onFinished() }
    let peer = self.peer
    let link = self.link
    /// What one try on the loop came to: done, failed, or to try again once this end's own
    /// invitation of the peer ended.
    enum Try: Sendable {
      case done
      case failed(InvitationError)
      case settle
    }
    // Waits at most once: the second try adopts whatever this end's invitation came to.
    var mayWait = true
    while true {
      let waiting = mayWait
      let outcome = await link.withHandler { handler -> Try in
        guard handler.isPendingDecision else { return .failed(.expired) }
        guard session.hasRoom(for: peer.fingerprint) else {
          handler.decline(.sessionFull, reason: "the session is full")
          return .failed(.sessionFull)
        }
        // Adopt before ACCEPT leaves: the inviter's loop may act on ACCEPT at once, and by
        // then this session must already list the peer.
        switch session.adopt(
          peer, link: link, handler: handler, invitedHere: false, mayWait: waiting)
        {
        case .adopted:
          _ = handler.accept()  // pending was checked above, on this same loop turn
        case .alreadyConnected:
          // Both invited each other: the link this end invited is the one both keep. Accept
          // this one (the inviter's end then settles the same way) and close it.
          _ = handler.accept()
          handler.disconnect(superseded: .crossed)
        case .settling:
          // Both are inviting each other and this end's invitation decides: wait for it.
          return .settle
        case .full:
          handler.decline(.sessionFull, reason: "the session is full")
          return .failed(.sessionFull)
        case .closed:
          handler.decline(.declined, reason: "the session was closed")
          return .failed(.cancelled)
        }
        return .done
      }
      switch outcome {
      case .done: break
      case .failed(let error): throw error
      case .settle:
        // Until this end's own invitation ended, but never past the inviter's patience nor
        // beyond its withdrawal, the session's close or this task's cancellation.
        mayWait = false
        await session.connector.invitationsSettled(
          to: peer.fingerprint, until: expiresAt - Self.waitMargin, in: session,
          wake: { stop in
            let withdrawn = hold.withLock { hold in
              hold.stop = stop
              return hold.withdrawn
            }
            if withdrawn { stop() }
          })
        hold.withLock { $0.stop = nil }
        if Task.isCancelled {
          // The accept itself was cancelled while it waited: the inviter hears no.
          link.onHandler { $0.decline(.declined, reason: "") }
          throw .cancelled
        }
        continue
      }
      break
    }
    try? knownPeers?.recordSeen(peer)
  }

  /// Declines, with an optional reason the inviter sees. Does nothing if already answered or
  /// expired.
  public func decline(reason: String = "") {
    guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
    link.onHandler { $0.decline(.declined, reason: reason) }
    onFinished()
  }

  /// Called when the inviter withdraws or the invitation expires.
  func withdrawn() {
    hold.withLock { hold in
      hold.withdrawn = true
      return hold.stop
    }?()
    if !answered.exchange(true, ordering: .acquiringAndReleasing) {
      onFinished()
    }
  }
}
