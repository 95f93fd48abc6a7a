import Ferry

extension MCError {
  /// The MultipeerConnectivity error for a Ferry transfer error.
  init(_ error: TransferError) {
    switch error {
    case .notConnected: self.init(.notConnected, "\(error)", underlying: error)
    case .messageTooLarge, .invalidStreamName:
      self.init(.invalidParameter, "\(error)", underlying: error)
    case .stalled: self.init(.timedOut, "\(error)", underlying: error)
    case .cancelled, .cancelledByPeer: self.init(.cancelled, "\(error)", underlying: error)
    case .peerDisconnected, .streamClosed: self.init(.notConnected, "\(error)", underlying: error)
    case .resource: self.init(.unknown, "\(error)", underlying: error)
    }
  }

  /// The MultipeerConnectivity error for a Ferry invitation error.
  init(_ error: InvitationError) {
    switch error {
    case .timedOut, .expired: self.init(.timedOut, "\(error)", underlying: error)
    case .cancelled: self.init(.cancelled, "\(error)", underlying: error)
    case .declined: self.init(.notConnected, "\(error)", underlying: error)
    case .contextTooLarge: self.init(.invalidParameter, "\(error)", underlying: error)
    default: self.init(.notConnected, "\(error)", underlying: error)
    }
  }

  /// The MultipeerConnectivity error for a Ferry discovery error.
  init(_ error: DiscoveryError) {
    switch error {
    case .discoveryUnavailable: self.init(.unavailable, "\(error)", underlying: error)
    case .invalidDiscoveryInfo, .invalidDisplayName:
      self.init(.invalidParameter, "\(error)", underlying: error)
    default: self.init(.unknown, "\(error)", underlying: error)
    }
  }
}
