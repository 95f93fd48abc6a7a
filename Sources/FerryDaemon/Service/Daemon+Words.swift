import Ferry
import FerryAPI
import FerryAgent
import FerryLocalSend
import Foundation

extension Daemon {
  /// A send that ended, as the history keeps it.
  static func historyEntry(_ entry: OutboxEntry) -> History.Entry {
    let outcome: History.Entry.Outcome
    switch entry.state {
    case .delivered: outcome = .done
    case .cancelled: outcome = .cancelled
    case .failed(_, let problem) where problem.code == "declined": outcome = .declined
    default: outcome = .failed
    }
    let delivered = entry.files.filter { [.stored, .identical, .skipped].contains($0.status) }
    return History.Entry(
      direction: .sent, peer: entry.to, fingerprint: entry.fingerprint,
      protocol: entry.carrier.rawValue, files: delivered.count,
      bytes: delivered.reduce(0) { $0 + $1.size }, outcome: outcome, id: entry.id)
  }

  /// A notification's title for a send that ended.
  static func endedSummary(_ entry: OutboxEntry) -> String {
    let to = printable(entry.to)
    switch entry.state {
    case .delivered: return "Ferry: delivered to \(to)"
    case .cancelled: return "Ferry: send to \(to) cancelled"
    case .expired: return "Ferry: \(to) was not seen; send expired"
    default: return "Ferry: could not deliver to \(to)"
    }
  }

  /// A notification's text for a send that ended.
  static func endedBody(_ entry: OutboxEntry) -> String {
    let delivered = entry.files.filter { [.stored, .identical, .skipped].contains($0.status) }
    var lines = ["\(Quantity.count(delivered.count, "file")) of \(entry.files.count) delivered."]
    let changed = entry.files.filter { $0.status == .changed || $0.status == .missing }.count
    if changed > 0 { lines.append("\(changed) changed or gone since queued (not sent).") }
    if case .failed(_, let problem) = entry.state { lines.append(problem.message) }
    lines.append("ferry outbox shows it (\(entry.id)).")
    return lines.joined(separator: "\n")
  }

  /// The peers around now that a name may name.
  static func around(_ courier: Courier) -> [DaemonSends.Around] {
    let ferry = courier.ferryPeers.compactMap { found -> DaemonSends.Around? in
      guard let key = found.peer.info.fingerprint else { return nil }
      return DaemonSends.Around(name: found.peer.name, fingerprint: key, carrier: .ferry)
    }
    let localSend = courier.localSendDevices.compactMap { seen -> DaemonSends.Around? in
      guard seen.sighting.device.usesTLS,
        let key = try? Fingerprint(parsing: seen.sighting.device.fingerprint)
      else { return nil }
      return DaemonSends.Around(
        name: seen.sighting.device.alias, fingerprint: key, carrier: .localsend)
    }
    return ferry + localSend
  }

  /// The peers around and known, as `GET /v1/peers` shows them.
  package func peers() -> Components.Schemas.Peers {
    let known = (try? configuration.knownPeers.all()) ?? []
    let byKey = Dictionary(
      known.map { ($0.fingerprint, $0) }, uniquingKeysWith: { first, _ in first })
    var around: [Components.Schemas.Peer] = []
    for (peer, lastSeen) in courier.ferryPeers {
      let key = peer.info.fingerprint?.hexString
      around.append(
        .init(
          name: peer.name, fingerprint: key, _protocol: .ferry, verified: true,
          addresses: peer.addresses.map(\.ip), port: Int(peer.port), lastSeen: lastSeen,
          known: key.map { byKey[$0] != nil } ?? false,
          trusted: key.flatMap { byKey[$0]?.trusted } ?? false))
    }
    for (sighting, lastSeen) in courier.localSendDevices {
      let key =
        sighting.device.usesTLS
        ? (try? Fingerprint(parsing: sighting.device.fingerprint))?.hexString : nil
      around.append(
        .init(
          name: sighting.device.alias, fingerprint: key, _protocol: .localsend,
          verified: sighting.proven, addresses: [sighting.address],
          port: sighting.device.port ?? Int(LocalSendProtocol.defaultPort), lastSeen: lastSeen,
          known: key.map { byKey[$0] != nil } ?? false,
          trusted: key.flatMap { byKey[$0]?.trusted } ?? false))
    }
    return .init(
      around: around.sorted { $0.name < $1.name },
      known: known.map { .init(name: $0.name, fingerprint: $0.fingerprint, trusted: $0.trusted) })
  }
}
