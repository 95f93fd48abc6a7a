/// A remote peer's state in a ``Session``, as in MultipeerConnectivity.
public enum PeerState: String, Hashable, Sendable {
  /// Not connected: never was, declined, disconnected, or found dead by the heartbeat.
  case notConnected
  /// The handshake with the peer is under way.
  case connecting
  /// The peer is connected.
  case connected
}
