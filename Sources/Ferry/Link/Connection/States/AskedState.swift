/// The inviter's connection once its INVITE is out
/// (``ConnectionStateMachine/State/awaitingAnswer(_:)``).
extension ConnectionStateMachine {
  /// The inviter's INVITE is out.
  struct Asked: Hashable {
    let known: Known
    /// When it stops waiting for the answer.
    let expiresAt: ContinuousClock.Instant
    /// The advertiser's COMMIT, until REVEAL is checked against it.
    var commitment: [UInt8]?
    /// The code, once REVEAL gave the advertiser's nonce.
    var code: VerificationCode?

    /// REVEAL gave `advertiserNonce`, this end's being `inviterNonce`: the state that holds the
    /// code (and no commitment any more), and the code; nil when the nonce is not the one
    /// committed to.
    func revealed(
      advertiserNonce: [UInt8], inviterNonce: [UInt8], localFingerprint: Fingerprint
    ) -> (asked: Asked, code: VerificationCode)? {
      // The nonce must be the one the advertiser committed to before it saw ours: else it
      // could have picked it to make the code what it wanted.
      guard VerificationCode.commitment(to: advertiserNonce) == commitment else { return nil }
      let derived = known.deriveCode(
        inviterNonce: inviterNonce, advertiserNonce: advertiserNonce,
        localFingerprint: localFingerprint)
      var next = self
      next.commitment = nil
      next.code = derived
      return (next, derived)
    }
  }
}
