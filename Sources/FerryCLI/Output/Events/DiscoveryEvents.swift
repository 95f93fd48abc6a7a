import Ferry

/// A peer seen through discovery: `peer-found` and `peer-updated` (`browse`, and `send` for
/// the receiver it found).
struct PeerSeen: EventRecord {
  static let events: [Event] = [.peerFound, .peerUpdated]

  /// One of its addresses.
  struct Address: Codable, Sendable {
    let ip: String
    let family: String
    let interface: String
  }

  let name: String
  let fingerprint: String?
  /// "ferry" (LocalSend devices are ``LocalSendFound``).
  let `protocol`: String
  let protocolVersion: Int?
  let service: String
  let domain: String
  let host: String
  let port: Int
  let addresses: [Address]
  /// Its TXT record's pairs, by key (sorted): kept as the peer wrote them.
  let txt: JSONValue

  init(_ peer: DiscoveredPeer) {
    name = peer.name
    fingerprint = peer.info.fingerprint?.hexString
    `protocol` = "ferry"
    protocolVersion = peer.info.protocolVersion
    service = peer.serviceType.dnsSDType
    domain = peer.domain
    host = peer.hostName
    port = Int(peer.port)
    addresses = peer.addresses.map {
      Address(ip: $0.ip, family: $0.family.rawValue, interface: $0.interface)
    }
    txt = .object(peer.info.values.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
  }
}

/// `peer-lost`: the peer's fields as it was last seen, and why (null: its records expired or
/// it said goodbye; `unreachable`: it listed itself but did not answer).
struct PeerLost: EventRecord {
  static let events: [Event] = [.peerLost]

  let peer: PeerSeen
  let reason: String?

  private enum CodingKeys: CodingKey { case reason }

  init(_ peer: DiscoveredPeer, reason: String? = nil) {
    self.peer = PeerSeen(peer)
    self.reason = reason
  }

  /// The peer's fields at the top level, then `reason`.
  func encode(to encoder: any Encoder) throws {
    try peer.encode(to: encoder)
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encodeIfPresent(reason, forKey: .reason)
  }

  init(from decoder: any Decoder) throws {
    peer = try PeerSeen(from: decoder)
    reason = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(
      String.self, forKey: .reason)
  }
}

/// `web-link`: `receive --web` serves its page at these links (one per address on the local
/// network) until `expires`.
struct WebLink: EventRecord {
  static let events: [Event] = [.webLink]
  let urls: [String]
  let port: Int
  /// When the link stops working (ISO 8601, UTC).
  let expires: String
}

/// `web-download`: `send --web`: a browser was let in (`status` "allowed", `path` null), was
/// refused ("declined"), or downloaded a file ("sent") or broke off ("failed", with `reason`).
struct WebDownload: EventRecord {
  static let events: [Event] = [.webDownload]
  let address: String
  let userAgent: String?
  let status: String
  let path: String?
  let bytes: Int?
  let reason: String?
}

/// `advertising`: `receive` is listening (and, when `discoverable`, published through mDNS).
struct Advertising: EventRecord {
  static let events: [Event] = [.advertising]
  let name: String
  let fingerprint: String
  let service: String
  let port: Int
  let dir: String
  let discoverable: Bool
}

/// `discovery-unavailable` and `discovery-interrupted`: avahi-daemon is not there, or went.
struct DiscoveryOutage: EventRecord {
  static let events: [Event] = [.discoveryUnavailable, .discoveryInterrupted]
  let reason: String
}

/// `discovery-failed`: avahi-daemon refused the service.
struct DiscoveryFailed: EventRecord {
  static let events: [Event] = [.discoveryFailed]
  let message: String
}

/// `renamed`: Avahi gave the service another name.
struct Renamed: EventRecord {
  static let events: [Event] = [.renamed]
  let from: String
  let to: String
}

/// `peer-remembered` (browse): a known peer answering where it was last reached, or a named
/// address answering, that mDNS does not find.
struct PeerRemembered: EventRecord {
  static let events: [Event] = [.peerRemembered]
  let name: String
  /// Its key (null: a named address whose key is learnt at the first contact). Not proven by
  /// the answer: checked in the TLS handshake when it is sent to.
  let fingerprint: String?
  /// `HOST:PORT`.
  let address: String
  /// "remembered" or "named".
  let source: String
}
