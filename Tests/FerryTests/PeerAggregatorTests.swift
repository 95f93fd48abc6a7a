import Testing

@testable import Ferry

@Suite("PeerAggregator: one peer per service name, whatever the interfaces")
struct PeerAggregatorTests {
  typealias Key = PeerAggregator.InstanceKey
  let fingerprint = try! Fingerprint(bytes: Array(repeating: 1, count: 32))

  func resolution(_ ip: String, _ family: DiscoveredAddress.Family, on interface: String)
    -> PeerAggregator.Resolution
  {
    let info = try! DiscoveryInfo(fingerprint: fingerprint, values: ["k": "v"])
    return .init(
      hostName: "b.local", port: 5000,
      address: DiscoveredAddress(family: family, ip: ip, interface: interface),
      txt: info.encodedEntries)
  }

  @Test("instances on several interfaces and protocols merge into one found peer")
  func merging() throws {
    var aggregator = PeerAggregator(serviceType: .ferry)
    let v4 = Key(interfaceIndex: 2, protocolFamily: 0, name: "bob", domain: "local")
    let v6 = Key(interfaceIndex: 2, protocolFamily: 1, name: "bob", domain: "local")
    let wifi = Key(interfaceIndex: 3, protocolFamily: 0, name: "BOB", domain: "local")

    guard case .found(let first) = aggregator.resolved(v6, resolution("fd00::2", .ipv6, on: "eth0"))
    else {
      Issue.record("first resolution must be found")
      return
    }
    #expect(first.peerID?.fingerprint == fingerprint)
    #expect(first.info.values == ["k": "v"])
    guard
      case .updated(let merged) = aggregator.resolved(v4, resolution("10.0.0.2", .ipv4, on: "eth0"))
    else {
      Issue.record("a new address must be an update")
      return
    }
    #expect(merged.addresses.map(\.ip) == ["10.0.0.2", "fd00::2"])
    // The same data again is not news.
    #expect(aggregator.resolved(v4, resolution("10.0.0.2", .ipv4, on: "eth0")) == nil)
    // Names compare case-insensitively, as in mDNS.
    #expect(aggregator.resolved(wifi, resolution("192.168.1.2", .ipv4, on: "wlan0")) != nil)
    #expect(aggregator.peers.count == 1)
    #expect(aggregator.peers[0].addresses.count == 3)

    #expect(aggregator.removed(wifi) != nil)
    #expect(aggregator.removed(v6) != nil)
    guard case .lost(let lost) = aggregator.removed(v4) else {
      Issue.record("the last instance gone must be lost")
      return
    }
    #expect(lost.name == "bob")
    #expect(aggregator.peers.isEmpty)
  }

  @Test("removing an instance that never resolved reports nothing")
  func unresolvedRemoval() {
    var aggregator = PeerAggregator(serviceType: .ferry)
    #expect(
      aggregator.removed(Key(interfaceIndex: 1, protocolFamily: 0, name: "x", domain: "local"))
        == nil)
  }

  @Test("removeAll reports every peer lost")
  func removeAll() {
    var aggregator = PeerAggregator(serviceType: .ferry)
    _ = aggregator.resolved(
      Key(interfaceIndex: 1, protocolFamily: 0, name: "a", domain: "local"),
      resolution("10.0.0.1", .ipv4, on: "eth0"))
    _ = aggregator.resolved(
      Key(interfaceIndex: 1, protocolFamily: 0, name: "b", domain: "local"),
      resolution("10.0.0.2", .ipv4, on: "eth0"))
    let events = aggregator.removeAll()
    #expect(events.count == 2)
    #expect(aggregator.peers.isEmpty)
  }

  @Test("a service without a valid fingerprint is reported without a PeerID")
  func foreignService() {
    var aggregator = PeerAggregator(serviceType: .ferry)
    let event = aggregator.resolved(
      Key(interfaceIndex: 1, protocolFamily: 0, name: "printer", domain: "local"),
      .init(
        hostName: "p.local", port: 631,
        address: DiscoveredAddress(family: .ipv4, ip: "10.0.0.9", interface: "eth0"),
        txt: [Array("rp=queue".utf8)]))
    guard case .found(let peer) = event else {
      Issue.record("expected found")
      return
    }
    #expect(peer.peerID == nil)
    #expect(peer.info.values == ["rp": "queue"])
  }
}
