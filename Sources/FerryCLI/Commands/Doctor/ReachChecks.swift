import Ferry
import Foundation

/// `ferry doctor`'s look beyond one subnet: whether peers this machine reached before answer
/// at their remembered addresses while mDNS does not find them — a network that does not pass
/// multicast between the machines (a router, a VLAN, a tunnel, Wi-Fi client isolation).
enum ReachChecks {
  /// The most known peers whose remembered addresses are tried (the ones reached last).
  static let maximumPeers = 16
  /// How long discovery has to find the peers that answered.
  static let browseFor: Duration = .seconds(3)

  /// The `multicast` check: remembered peers that answer, against what mDNS finds of
  /// `serviceType` (not looked for when avahi-daemon is down: `avahiUp` false).
  static func multicast(_ serviceType: ServiceType, avahiUp: Bool) async -> DoctorCheck {
    let known = RememberedRoute.lastReached(maximumPeers, in: KnownPeers())
    guard !known.isEmpty else {
      return .ok("multicast", "no peer was reached at a remembered address yet: nothing to compare")
    }
    let routes = known.flatMap { entry in
      (entry.addresses ?? []).compactMap(HostPort.init).map { (entry, $0) }
    }
    let answered = await TCPAnswers.answering(
      routes.map { (host: $0.1.host, port: Int($0.1.port)) }, within: .seconds(3))
    var answering: [(KnownPeers.Entry, HostPort)] = []
    for index in answered where !answering.contains(where: { $0.0 == routes[index].0 }) {
      answering.append(routes[index])
    }
    guard !answering.isEmpty else {
      return .ok(
        "multicast",
        "none of the \(Quantity.count(known.count, "peer")) reached before answers at its "
          + "remembered addresses now (switched off, or elsewhere): nothing to compare")
    }
    guard avahiUp else {
      return .warning("multicast", "not compared: avahi-daemon is not reachable")
    }
    let found = await discovered(serviceType, wanted: Set(answering.map(\.0.fingerprint)))
    let missing = answering.filter { !found.contains($0.0.fingerprint) }
    guard !missing.isEmpty else {
      return .ok(
        "multicast",
        "the \(Quantity.count(answering.count, "peer")) answering where last reached "
          + "\(answering.count == 1 ? "is" : "are") found by mDNS too")
    }
    let names = missing.map { "\(DisplayText.quoted($0.0.name)) at \($0.1)" }
      .joined(separator: ", ")
    return .warning(
      "multicast",
      "\(names) \(missing.count == 1 ? "answers" : "answer") where last reached, but mDNS does "
        + "not find \(missing.count == 1 ? "it" : "them"): your network does not pass "
        + "multicast between these machines (a router, a VLAN, a tunnel or Wi-Fi client "
        + "isolation)",
      fix: "'ferry send --to NAME' still reaches such a peer at its remembered address (its key "
        + "is checked); keep its receiver on a fixed port ('ferry receive --port N'), or name "
        + "its address: 'ferry peers add NAME HOST:PORT'. For discovery itself, the router must "
        + "pass mDNS (an mDNS reflector: avahi-daemon's enable-reflector=yes there)")
  }

  /// The fingerprints (hex) among `wanted` that a browse finds within ``browseFor``.
  private static func discovered(_ serviceType: ServiceType, wanted: Set<String>) async
    -> Set<String>
  {
    guard let browser = try? Browser(serviceType: serviceType) else { return [] }
    defer { browser.stop() }
    let deadline = ContinuousClock.now + browseFor
    var found: Set<String> = []
    while ContinuousClock.now < deadline {
      found = Set(browser.peers.compactMap { $0.info.fingerprint?.hexString })
      if wanted.isSubset(of: found) { break }
      try? await Task.sleep(for: .milliseconds(100))
    }
    return found.intersection(wanted)
  }
}
