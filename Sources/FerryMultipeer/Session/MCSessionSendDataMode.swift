import Ferry

/// How ``MCSession/send(_:toPeers:with:)`` delivers data, as MultipeerConnectivity's
/// `MCSessionSendDataMode`.
public enum MCSessionSendDataMode: Int, Sendable, Hashable {
  /// Delivered in order, or the link fails.
  case reliable = 0
  /// May be dropped when the link is congested (Ferry's ``SendMode/unreliable``: over TLS, what
  /// is sent still arrives in order).
  case unreliable = 1

  var ferryMode: SendMode {
    switch self {
    case .reliable: .reliable
    case .unreliable: .unreliable
    }
  }
}
