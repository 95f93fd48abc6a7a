/// Merges DNS-SD service instances into peers.
///
/// Avahi reports one instance per (interface, IP protocol) on which a service is seen, so one
/// peer on two interfaces with IPv4 and IPv6 arrives four times. The aggregator reports a peer
/// once when its first instance resolves, as updated when the merged view changes, and as lost
/// when its last instance goes. Pure state, no I/O: the browser feeds it on the poll thread.
struct PeerAggregator {
  /// Identifies one instance as Avahi reports it.
  struct InstanceKey: Hashable {
    var interfaceIndex: Int32
    var protocolFamily: Int32
    var name: String
    var domain: String

    /// mDNS names compare case-insensitively.
    var peerKey: String { "\(name.lowercased())\u{0}\(domain.lowercased())" }
  }

  /// What one resolved instance says.
  struct Resolution: Equatable {
    var hostName: String
    var port: UInt16
    var address: DiscoveredAddress
    var txt: [[UInt8]]
  }

  let serviceType: ServiceType
  private var resolutions: [InstanceKey: (resolution: Resolution, sequence: Int)] = [:]
  private var reported: [String: DiscoveredPeer] = [:]
  private var sequence = 0

  init(serviceType: ServiceType) {
    self.serviceType = serviceType
  }

  /// The peers currently found.
  var peers: [DiscoveredPeer] {
    reported.values.sorted { $0.name < $1.name }
  }

  /// The key under which `peer` is merged.
  func peerKey(of peer: DiscoveredPeer) -> String {
    InstanceKey(interfaceIndex: 0, protocolFamily: 0, name: peer.name, domain: peer.domain).peerKey
  }

  /// An instance resolved (first time, or again with new data).
  mutating func resolved(_ key: InstanceKey, _ resolution: Resolution) -> BrowserEvent? {
    sequence += 1
    resolutions[key] = (resolution, sequence)
    return reconcile(peerKey: key.peerKey, name: key.name, domain: key.domain)
  }

  /// An instance disappeared (whether or not it had resolved).
  mutating func removed(_ key: InstanceKey) -> BrowserEvent? {
    guard resolutions.removeValue(forKey: key) != nil else { return nil }
    return reconcile(peerKey: key.peerKey, name: key.name, domain: key.domain)
  }

  /// Forgets everything, reporting every found peer as lost (the daemon went away).
  mutating func removeAll() -> [BrowserEvent] {
    let lost = peers.map { BrowserEvent.lost($0) }
    resolutions = [:]
    reported = [:]
    return lost
  }

  private mutating func reconcile(peerKey: String, name: String, domain: String) -> BrowserEvent? {
    let instances = resolutions.filter { $0.key.peerKey == peerKey }
    guard let latest = instances.max(by: { $0.value.sequence < $1.value.sequence }) else {
      return reported.removeValue(forKey: peerKey).map { .lost($0) }
    }
    let addresses = Set(instances.values.map(\.resolution.address)).sorted()
    let newest = latest.value.resolution
    let peer = DiscoveredPeer(
      name: latest.key.name, serviceType: serviceType, domain: latest.key.domain,
      hostName: newest.hostName, port: newest.port, addresses: addresses,
      info: DiscoveryInfo(decoding: newest.txt))
    let previous = reported.updateValue(peer, forKey: peerKey)
    switch previous {
    case nil: return .found(peer)
    case peer: return nil
    default: return .updated(peer)
    }
  }
}
