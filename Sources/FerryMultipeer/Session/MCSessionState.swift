import Ferry

/// A peer's state in a session, as MultipeerConnectivity's `MCSessionState`.
public enum MCSessionState: Int, Sendable, Hashable, CustomStringConvertible {
  /// Not (or no longer) in the session.
  case notConnected = 0
  /// An invitation or handshake is under way.
  case connecting = 1
  /// In the session: data, streams and resources can be sent.
  case connected = 2

  init(_ state: PeerState) {
    switch state {
    case .notConnected: self = .notConnected
    case .connecting: self = .connecting
    case .connected: self = .connected
    }
  }

  /// The case's name, as Apple's constants end (`connected`).
  public var description: String {
    switch self {
    case .notConnected: "notConnected"
    case .connecting: "connecting"
    case .connected: "connected"
    }
  }
}
