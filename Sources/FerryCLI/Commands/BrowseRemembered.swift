import Ferry
import Foundation

/// What `ferry browse` adds beyond mDNS: the known peers that answer where they were last
/// reached, and the named addresses that answer, when mDNS does not find them (another subnet,
/// a VLAN, a tunnel). An answer is a TCP connection: the key is proven only when it is sent
/// to, and that is what the line says.
enum BrowseRemembered {
  /// How long mDNS looks alone first (a peer it finds is listed by it).
  static let after: Duration = .seconds(2)
  /// The most known peers tried (the ones reached last).
  static let maximumPeers = 16

  /// One address to try, and what it stands for.
  private struct Candidate {
    let name: String
    let fingerprint: String?
    let address: HostPort
    let source: String
  }

  /// Lists, once, the remembered and named addresses that answer and whose key is not among
  /// those mDNS found (`seen`, read when they have answered); returns how many were listed.
  static func list(
    seen: @Sendable () -> Set<String>, output: EventWriter, json: Bool, until stop: Duration?
  ) async -> Int {
    let started = ContinuousClock.now
    guard (try? await Task.sleep(for: after)) != nil else { return 0 }
    let store = KnownPeers()
    var candidates: [Candidate] = []
    let known = RememberedRoute.lastReached(maximumPeers, in: store)
    for entry in known {
      for address in (entry.addresses ?? []).compactMap(HostPort.init) {
        candidates.append(
          Candidate(
            name: entry.name, fingerprint: entry.fingerprint, address: address,
            source: "remembered"))
      }
    }
    let named = ((try? store.namedAddresses()) ?? []) + RememberedRoute.configured.map(\.named)
    for entry in named {
      guard let address = HostPort(entry.address) else { continue }
      candidates.append(
        Candidate(
          name: entry.name, fingerprint: entry.fingerprint, address: address, source: "named"))
    }
    guard !candidates.isEmpty else { return 0 }
    var timeout = RememberedRoute.answerTimeout
    if let stop { timeout = min(timeout, stop - (ContinuousClock.now - started)) }
    guard timeout > .zero else { return 0 }
    let answered = await TCPAnswers.answering(
      candidates.map { (host: $0.address.host, port: Int($0.address.port)) }, within: timeout)
    guard !Task.isCancelled else { return 0 }
    let seen = seen()
    var listed: [String] = []
    for candidate in answered.map({ candidates[$0] }) {
      let id = candidate.fingerprint ?? "named:" + candidate.name.lowercased()
      guard !listed.contains(id), !seen.contains(candidate.fingerprint ?? "") else { continue }
      listed.append(id)
      output.emit(
        PeerRemembered(
          name: candidate.name, fingerprint: candidate.fingerprint,
          address: candidate.address.description, source: candidate.source))
      if !json {
        let key =
          candidate.fingerprint.flatMap { try? Fingerprint(parsing: $0) }.map {
            " [\($0.shortDescription)]"
          } ?? ""
        let why =
          candidate.source == "named"
          ? "named: answers there" : "remembered: answers where it was last reached"
        output.say(
          "+ \(DisplayText.quoted(candidate.name))\(key)  \(candidate.address)  (\(why); not "
            + "found by mDNS; its key is checked when sent to)")
      }
    }
    return listed.count
  }
}
