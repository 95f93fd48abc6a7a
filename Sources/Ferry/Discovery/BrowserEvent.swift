/// What a ``Browser`` reports.
public enum BrowserEvent: Hashable, Sendable {
  /// A peer appeared and was resolved.
  case found(DiscoveredPeer)
  /// A known peer changed: an address, port or TXT record, or an interface came or went.
  case updated(DiscoveredPeer)
  /// A peer is gone from every interface (its last known record is given).
  case lost(DiscoveredPeer)
}

extension BrowserEvent {
  /// The peer the event is about, whatever its kind.
  public var peer: DiscoveredPeer {
    switch self {
    case .found(let peer), .updated(let peer), .lost(let peer): return peer
    }
  }
}
