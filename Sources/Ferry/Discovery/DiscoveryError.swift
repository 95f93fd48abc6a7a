/// Errors from advertising and browsing.
public enum DiscoveryError: Error, Hashable, Sendable, CustomStringConvertible {
  /// avahi-daemon (or the D-Bus system bus it is reached through) is not running. `reason` is
  /// Avahi's own words. The description says how to start it. Without it, peers can still
  /// invite a listener by its address
  /// (``Session/invite(host:port:expecting:context:timeout:onVerificationCode:)``).
  case discoveryUnavailable(reason: String)
  /// The discovery info cannot be published.
  case invalidDiscoveryInfo(TXTRecordError)
  /// avahi-daemon refused or dropped the registration (after it was reachable).
  case registrationFailed(reason: String)
  /// avahi-daemon could not browse or resolve.
  case browsingFailed(reason: String)
  /// The advertiser was stopped before its service was published.
  case stopped
  /// The display name cannot name a peer.
  case invalidDisplayName(PeerIDError)
  /// The advertiser's listener cannot bind its port: another program listens on it.
  case portInUse(port: UInt16)
  /// The advertiser's listener cannot bind its port, for another reason.
  case cannotListen(port: UInt16, reason: String)

  /// A message for users, with the remedy where there is one.
  public var description: String {
    switch self {
    case .discoveryUnavailable(let reason):
      return """
        mDNS discovery is unavailable: cannot reach avahi-daemon (\(reason)).
        Start it with 'sudo systemctl start avahi-daemon' (or 'sudo service avahi-daemon start'; \
        install it with 'sudo apt install avahi-daemon'); it needs the D-Bus system bus.
        """
    case .invalidDiscoveryInfo(let error):
      return error.description
    case .registrationFailed(let reason):
      return "avahi-daemon could not publish the service: \(reason)"
    case .browsingFailed(let reason):
      return "avahi-daemon could not browse: \(reason)"
    case .stopped:
      return "the advertiser was stopped before its service was published"
    case .invalidDisplayName(let error):
      return error.description
    case .portInUse(let port):
      return "cannot listen on port \(port): another program is using it"
    case .cannotListen(let port, let reason):
      return "cannot listen on port \(port): \(reason)"
    }
  }
}
