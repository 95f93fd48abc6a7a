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
