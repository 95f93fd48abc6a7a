/// The NDJSON events `--json` writes: their names and the fields each may carry, declared once
/// here (docs/CLI.md lists exactly these; `EventCatalogTests` checks it).
enum Event: String, CaseIterable, Sendable {
  case peerFound = "peer-found"
  case peerUpdated = "peer-updated"
  case peerLost = "peer-lost"
  case advertising
  case discoveryUnavailable = "discovery-unavailable"
  case renamed
  case discoveryInterrupted = "discovery-interrupted"
  case discoveryFailed = "discovery-failed"
  case invited
  case invitation
  case keyChanged = "key-changed"
  case accepted
  case declined
  case refused
  case withdrawn
  case text
  case check
  case offer
  case progress
  case fileDone = "file-done"
  case leftOut = "left-out"
  case done
  case retrying
  case resumed
  case stagingCleaned = "staging-cleaned"
  case error
  case identity
  case peer

  /// The fields of a peer seen through discovery (`peer-found`, `peer-updated`, `peer-lost`).
  static let discoveredPeerFields = [
    "name", "fingerprint", "protocol_version", "service", "domain", "host", "port", "addresses",
    "txt",
  ]

  /// The fields of each element of `addresses`.
  static let addressFields = ["ip", "family", "interface"]

  /// Every field the event may carry besides `event` and `timestamp` (some only from one
  /// command, or only in some cases: docs/CLI.md says which).
  var fields: [String] {
    switch self {
    case .peerFound, .peerUpdated: return Self.discoveredPeerFields
    case .peerLost: return Self.discoveredPeerFields + ["reason"]
    case .advertising: return ["name", "fingerprint", "service", "port", "dir", "discoverable"]
    case .discoveryUnavailable, .discoveryInterrupted: return ["reason"]
    case .discoveryFailed: return ["message"]
    case .renamed: return ["from", "to"]
    case .invited: return ["peer", "code"]
    case .invitation:
      return [
        "peer", "fingerprint", "status", "code", "files", "folders", "bytes", "streamed", "text",
        "expires",
      ]
    case .keyChanged: return ["peer", "fingerprint", "previous"]
    case .accepted: return ["peer", "fingerprint", "code", "resumed"]
    case .declined: return ["peer", "reason", "files", "bytes"]
    case .refused: return ["peer", "files", "code", "message"]
    case .withdrawn: return ["peer"]
    case .text: return ["peer", "text"]
    case .check: return ["name", "status", "message", "fix"]
    case .offer: return ["peer", "files", "folders", "bytes", "streamed"]
    case .progress: return ["peer", "bytes", "total", "bytes_per_second", "files_done", "files"]
    case .fileDone: return ["peer", "path", "checksum", "digest", "sha256", "status", "saved"]
    case .leftOut: return ["path", "reason", "unreadable"]
    case .done:
      return [
        "peer", "files", "folders", "bytes", "stored", "identical", "bytes_sent", "unreadable",
        "error",
        "code",
      ]
    case .retrying: return ["peer", "attempt", "delay", "reason"]
    case .resumed: return ["peer", "attempt"]
    case .stagingCleaned: return ["files", "bytes", "dir"]
    case .error: return ["code", "exit", "message", "peer", "path"]
    case .identity:
      return ["fingerprint", "fingerprint_grouped", "short", "certificate", "directory"]
    case .peer: return ["name", "fingerprint", "trusted", "first_seen", "last_seen"]
    }
  }
}
