/// A peer found by a ``Browser``: what its DNS-SD records say, merged over every interface and
/// IP protocol it was seen on.
public struct DiscoveredPeer: Hashable, Sendable, CustomStringConvertible {
  /// The service instance name, which is the advertiser's display name (or Avahi's alternative,
  /// e.g. `alice #2`, after a collision).
  public let name: String
  /// The service type browsed for.
  public let serviceType: ServiceType
  /// The DNS-SD domain, normally `local`.
  public let domain: String
  /// The host name in the SRV record, e.g. `laptop.local`.
  public let hostName: String
  /// The TCP port in the SRV record.
  public let port: UInt16
  /// Every resolved address, IPv4 first, each with the interface it was seen on.
  public let addresses: [DiscoveredAddress]
  /// The decoded TXT record.
  public let info: DiscoveryInfo

  /// Creates a discovered peer (the browser does this; tests and apps may too).
  public init(
    name: String, serviceType: ServiceType, domain: String, hostName: String, port: UInt16,
    addresses: [DiscoveredAddress], info: DiscoveryInfo
  ) {
    self.name = name
    self.serviceType = serviceType
    self.domain = domain
    self.hostName = hostName
    self.port = port
    self.addresses = addresses
    self.info = info
  }

  /// The peer's identity, when its TXT record carries a valid fingerprint and its name is a valid
  /// display name; nil for services of the type that are not Ferry peers.
  public var peerID: PeerID? {
    guard let fingerprint = info.fingerprint else { return nil }
    return try? PeerID(displayName: name, fingerprint: fingerprint)
  }

  /// `name [short fingerprint] at address:port, …`.
  public var description: String {
    let who = peerID?.description ?? "\(name) [no fingerprint]"
    let whereabouts = addresses.map { "\($0.hostPortString(port: port))" }.joined(separator: ", ")
    return "\(who) at \(whereabouts)"
  }
}

/// One resolved address of a discovered peer.
public struct DiscoveredAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The IP version of an address.
  public enum Family: String, Hashable, Sendable, Comparable {
    /// IPv4.
    case ipv4
    /// IPv6.
    case ipv6

    /// IPv4 sorts first.
    public static func < (lhs: Family, rhs: Family) -> Bool {
      lhs == .ipv4 && rhs == .ipv6
    }
  }

  /// IPv4 or IPv6.
  public let family: Family
  /// The address in text form; link-local IPv6 addresses carry their zone, e.g. `fe80::1%eth0`.
  public let ip: String
  /// The name of the interface the service was seen on, e.g. `eth0`.
  public let interface: String

  /// Creates an address record.
  public init(family: Family, ip: String, interface: String) {
    self.family = family
    self.ip = ip
    self.interface = interface
  }

  /// `ip:port`, with brackets around IPv6 (`[fe80::1%eth0]:5000`).
  public func hostPortString(port: UInt16) -> String {
    family == .ipv6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
  }

  /// `ip on interface`.
  public var description: String { "\(ip) on \(interface)" }

  /// Orders by family (IPv4 first), then address, then interface.
  public static func < (lhs: DiscoveredAddress, rhs: DiscoveredAddress) -> Bool {
    (lhs.family, lhs.ip, lhs.interface) < (rhs.family, rhs.ip, rhs.interface)
  }
}

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
