import ArgumentParser
import Ferry
import Foundation

/// `ferry peers`: lists the peers this machine knows.
struct PeersCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "peers",
    abstract: "List the peers this machine has met or trusts.",
    discussion: """
      Peers are recorded by fingerprint when a connection with them is accepted (the \
      \(KnownPeers.maximumSeenPeers) seen most recently are kept), and marked trusted with \
      'ferry trust', which pins their name: a trusted peer's name arriving with another \
      fingerprint is reported as KEY CHANGED. Two machines that merely share a name are two \
      peers.

      Examples:
        ferry peers
        ferry peers --json | jq -r 'select(.trusted) | .name'
      """)

  @OptionGroup var logging: LogOptions

  @Flag(name: [.short, .long], help: "Write one JSON object per peer to stdout.")
  var json = false

  func run() async throws {
    let output = EventWriter(json: json)
    let peers: [KnownPeers.Entry]
    do {
      peers = try KnownPeers().all()
    } catch {
      throw CLIFailure(status: .transferFailed, message: error.description, code: .peersFile)
    }
    for peer in peers {
      output.emit(
        KnownPeer(
          name: peer.name, fingerprint: peer.fingerprint, trusted: peer.trusted,
          firstSeen: EventWriter.timestamp(peer.firstSeen),
          lastSeen: EventWriter.timestamp(peer.lastSeen)))
      if !json {
        let fingerprint =
          (try? Fingerprint(parsing: peer.fingerprint))?.shortDescription ?? peer.fingerprint
        // Local time, the same in every locale: Foundation's own styles put a narrow
        // no-break space (U+202F) before "PM", which the terminal-safe printer escapes.
        let seen = peer.lastSeen.formatted(
          Date.ISO8601FormatStyle(
            dateSeparator: .dash, dateTimeSeparator: .space, timeZone: .current
          )
          .year().month().day().time(includingFractionalSeconds: false))
        output.say(
          "\(peer.trusted ? "trusted" : "known  ")  \(fingerprint)  \(peer.name)  (last seen \(seen))"
        )
      }
    }
    if peers.isEmpty && !json {
      output.note("No known peers yet.")
    }
  }
}

/// A full fingerprint, or the one known peer whose fingerprint starts with `text`.
func resolveFingerprint(_ text: String, in store: KnownPeers, allowUnknown: Bool) throws(CLIFailure)
  -> Fingerprint
{
  if let full = try? Fingerprint(parsing: text) {
    return full
  }
  guard let digits = Fingerprint.prefixLength(of: text), digits > 0 else {
    throw CLIFailure(
      status: .usage,
      message: "'\(DisplayText.escaping(text))' is not a fingerprint: use its hexadecimal digits "
        + "(as 'ferry identity' and 'ferry peers' show them)",
      code: .invalidFingerprint)
  }
  let known: [KnownPeers.Entry]
  do {
    known = try store.all()
  } catch {
    throw CLIFailure(status: .transferFailed, message: error.description, code: .peersFile)
  }
  let matches = known.compactMap { try? Fingerprint(parsing: $0.fingerprint) }.filter {
    $0.hasPrefix(text)
  }
  switch matches.count {
  case 1:
    return matches[0]
  case 0:
    let hint = allowUnknown ? " (give the full 64-digit fingerprint for a peer not met yet)" : ""
    throw CLIFailure(
      status: .usage, message: "no known peer has a fingerprint starting with \"\(text)\"\(hint)",
      code: .unknownPeer)
  default:
    throw CLIFailure(
      status: .usage,
      message: "\"\(text)\" matches \(matches.count) known peers; give more digits",
      code: .ambiguousPeer)
  }
}
