/// One change of a peer's state.
public struct PeerStateChange: Hashable, Sendable {
  /// The peer.
  public let peer: PeerID
  /// Its new state.
  public let state: PeerState
  /// For ``PeerState/notConnected``: why its link ended — closed on purpose by either end, lost,
  /// or superseded by another link between the same two peers (``LinkEnd``); nil otherwise.
  public let end: LinkEnd?

  /// Why it left, in words, for ``PeerState/notConnected`` (``end``'s description).
  public var reason: String? { end?.description }

  /// A change; `end` only for ``PeerState/notConnected``.
  public init(peer: PeerID, state: PeerState, end: LinkEnd? = nil) {
    self.peer = peer
    self.state = state
    self.end = end
  }
}
