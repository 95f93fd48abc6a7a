/// One change of a peer's state.
public struct PeerStateChange: Hashable, Sendable {
  /// The peer.
  public let peer: PeerID
  /// Its new state.
  public let state: PeerState
  /// Why it left, for ``PeerState/notConnected``.
  public let reason: String?
  /// For ``PeerState/notConnected``: the link was closed on purpose, by either end (a GOODBYE,
  /// a protocol violation or a broken limit), rather than lost (a drop, a reset, silence).
  /// Only a lost link is worth connecting again.
  public let closedOnPurpose: Bool

  /// A change; `closedOnPurpose` only means something for ``PeerState/notConnected``.
  public init(peer: PeerID, state: PeerState, reason: String?, closedOnPurpose: Bool = false) {
    self.peer = peer
    self.state = state
    self.reason = reason
    self.closedOnPurpose = closedOnPurpose
  }
}
