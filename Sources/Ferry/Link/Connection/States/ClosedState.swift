/// An ended connection (``ConnectionStateMachine/State/closed(_:)``).
extension ConnectionStateMachine {
  /// An ended connection: why, and what it had agreed.
  struct Closed: Hashable {
    let end: LinkEnd
    let version: UInt16?
    let code: VerificationCode?
  }
}
