/// The advertiser's connection once the INVITE came
/// (``ConnectionStateMachine/State/pendingDecision(_:)``).
extension ConnectionStateMachine {
  /// The advertiser's application has the invitation.
  struct Pending: Hashable {
    let known: Known
    let code: VerificationCode
    /// Whether REVEAL was sent.
    var revealed = false

    /// REVEAL is sent: the state that says so; nil when it was sent already.
    func revealing() -> Pending? {
      guard !revealed else { return nil }
      var next = self
      next.revealed = true
      return next
    }
  }
}
