import Synchronization

/// What happens to an ``Advertiser``'s publication.
public enum AdvertiserEvent: Hashable, Sendable {
  /// The service is established on the network under `name` (again, after a daemon restart).
  case published(name: String)
  /// `from` was taken by another service; the advertiser now publishes as `to`.
  case renamed(from: String, to: String)
  /// avahi-daemon went away; the service comes back by itself when the daemon returns.
  case daemonDisconnected(reason: String)
  /// avahi-daemon refused the service.
  case failed(DiscoveryError)
}
