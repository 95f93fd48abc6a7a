/// The connection once HELLO named the peer (``ConnectionStateMachine/State/awaitingCommit(_:)``
/// on the inviter, ``ConnectionStateMachine/State/awaitingInvite(_:)`` on the advertiser).
extension ConnectionStateMachine {
  /// The peer named itself in HELLO, and a version was agreed.
  struct Known: Hashable {
    let peer: PeerID
    let version: UInt16
    let keyingMaterial: [UInt8]

    /// The inviter has the advertiser's commitment, `digest`, at `now`, and asks, waiting at
    /// most `timeout` (clamped to ``ConnectionTimeouts/maximumInvitationTimeout``): the state
    /// it waits in, and that wait in milliseconds, for its INVITE.
    func committed(
      _ digest: [UInt8], timeout: Duration, now: ContinuousClock.Instant
    ) -> (asked: Asked, milliseconds: UInt32) {
      let clamped = min(timeout, ConnectionTimeouts.maximumInvitationTimeout)
      let asked = Asked(known: self, expiresAt: now + clamped, commitment: digest)
      return (asked, UInt32(clamping: clamped.timeAmount.nanoseconds / 1_000_000))
    }

    /// The advertiser, whose nonce is `advertiserNonce`, received at `now` an INVITE with the
    /// inviter's wait in `milliseconds`, its nonce and `context`: the pending state, and what
    /// the application learns.
    func invited(
      milliseconds: UInt32, inviterNonce: [UInt8], context: [UInt8], advertiserNonce: [UInt8],
      localFingerprint: Fingerprint, now: ContinuousClock.Instant
    ) -> (pending: Pending, invite: IncomingInvite) {
      // The inviter's wait, as it says, but never longer than the clamp: one connection must
      // not hold a prompt or a pending slot for days.
      let timeout = min(
        Duration.milliseconds(Int64(milliseconds)), ConnectionTimeouts.maximumInvitationTimeout)
      let derived = deriveCode(
        inviterNonce: inviterNonce, advertiserNonce: advertiserNonce,
        localFingerprint: localFingerprint)
      let invite = IncomingInvite(
        peer: peer, context: context, timeout: timeout, expiresAt: now + timeout,
        verificationCode: derived)
      return (Pending(known: self, code: derived), invite)
    }

    /// The code of this connection with the peer, this end's fingerprint being
    /// `localFingerprint`.
    func deriveCode(
      inviterNonce: [UInt8], advertiserNonce: [UInt8], localFingerprint: Fingerprint
    ) -> VerificationCode {
      VerificationCode(
        keyingMaterial: keyingMaterial, inviterNonce: inviterNonce,
        advertiserNonce: advertiserNonce, fingerprints: localFingerprint, peer.fingerprint)
    }
  }
}
