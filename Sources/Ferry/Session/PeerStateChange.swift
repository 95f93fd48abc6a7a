/// One change of a peer's state.
public struct PeerStateChange: Hashable, Sendable {
  /// The peer.
  public let peer: PeerID
  /// Its new state.
  public let state: PeerState
  /// Why it left, for ``PeerState/notConnected``.
  public let reason: String?
}
