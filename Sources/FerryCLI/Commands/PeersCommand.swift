import ArgumentParser
import Ferry
import Foundation

/// `ferry peers`: the peers this machine knows, and the addresses the user named.
struct PeersCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "peers",
    abstract: "List the peers this machine has met or trusts; name a receiver's address.",
    subcommands: [PeersListCommand.self, PeersAddCommand.self, PeersRemoveCommand.self],
    defaultSubcommand: PeersListCommand.self)
}

/// `ferry peers [list]`.
struct PeersListCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "list",
    abstract: "List the peers this machine has met or trusts, and the addresses named.",
    discussion: """
      Peers are recorded by fingerprint when a connection with them is accepted (the \
      \(KnownPeers.maximumSeenPeers) seen most recently are kept), and marked trusted with \
      'ferry trust', which pins their name: a trusted peer's name arriving with another \
      fingerprint is reported as KEY CHANGED. Two machines that merely share a name are two \
      peers.

      A receiver this machine sent to is listed with the addresses it was reached at (at most \
      \(KnownPeers.maximumAddresses)): 'ferry send --to' tries them when discovery does not find \
      it within \(RememberedRoute.wait.components.seconds) s (another subnet, a VLAN, a tunnel), \
      and forgets one where another key answers. 'ferry forget' clears them with the peer. \
      Addresses named with 'ferry peers add' are listed after the peers.

      Examples:
        ferry peers
        ferry peers --json | jq -r 'select(.trusted) | .name'
      """)

  @OptionGroup var logging: LogOptions

  @Flag(name: [.short, .long], help: "Write one JSON object per peer to stdout.")
  var json = false

  func run() async throws {
    let output = EventWriter(json: json)
    let store = KnownPeers()
    let peers: [KnownPeers.Entry]
    let named: [KnownPeers.NamedAddress]
    do {
      peers = try store.all()
      named = try store.namedAddresses()
    } catch {
      throw CLIFailure(status: .transferFailed, message: error.description, code: .peersFile)
    }
    for peer in peers {
      output.emit(
        KnownPeer(
          name: peer.name, fingerprint: peer.fingerprint, trusted: peer.trusted,
          firstSeen: EventWriter.timestamp(peer.firstSeen),
          lastSeen: EventWriter.timestamp(peer.lastSeen), addresses: peer.addresses ?? [],
          reachedAt: peer.reachedAt.map(EventWriter.timestamp)))
      if !json {
        let fingerprint =
          (try? Fingerprint(parsing: peer.fingerprint))?.shortDescription ?? peer.fingerprint
        let reached = peer.addresses.map { "; reached at " + $0.joined(separator: ", ") } ?? ""
        output.say(
          "\(peer.trusted ? "trusted" : "known  ")  \(fingerprint)  \(peer.name)  "
            + "(last seen \(Self.localTime(peer.lastSeen))\(reached))")
      }
    }
    // The config's [peers.NAME] tables, but for names peers.json holds (those go first).
    let taken = Set(named.map { $0.name.lowercased() })
    let configured = RememberedRoute.configured.filter { !taken.contains($0.name.lowercased()) }
    for (entry, source) in named.map({ ($0, "peers") }) + configured.map({ ($0.named, "config") }) {
      output.emit(
        NamedPeer(
          name: entry.name, address: entry.address, fingerprint: entry.fingerprint,
          source: source))
      if !json {
        let key =
          entry.fingerprint.flatMap { try? Fingerprint(parsing: $0) }?.shortDescription
          ?? "no key yet: learnt at the first send"
        output.say(
          "named    \(entry.name)  \(entry.address)  [\(key)]"
            + (source == "config" ? "  (config)" : ""))
      }
    }
    if peers.isEmpty && named.isEmpty && configured.isEmpty && !json {
      output.note("No known peers yet.")
    }
  }

  /// Local time, the same in every locale: Foundation's own styles put a narrow no-break
  /// space (U+202F) before "PM", which the terminal-safe printer escapes.
  private static func localTime(_ date: Date) -> String {
    date.formatted(
      Date.ISO8601FormatStyle(dateSeparator: .dash, dateTimeSeparator: .space, timeZone: .current)
        .year().month().day().time(includingFractionalSeconds: false))
  }
}

/// `ferry peers add NAME HOST:PORT [--fingerprint FPR]`.
struct PeersAddCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "add",
    abstract: "Name a receiver's address, for 'ferry send --to NAME' where discovery does not go.",
    discussion: """
      For a receiver behind a router, in another VLAN or through a tunnel, which mDNS does not \
      reach: run it with a fixed port ('ferry receive --port 53000', or port in its config), \
      and name its address here. 'ferry send --to NAME' then connects there at once. HOST is a \
      host name (resolved by the system resolver, IPv4 and IPv6) or an IP address, IPv6 in \
      brackets.

      With --fingerprint (its 'ferry identity'), the receiver must prove that key in the TLS \
      handshake. Without it, the first send is a first contact: compare the verification code \
      both ends show; the key that answered is then the name's, and later sends must meet it.

      Examples:
        ferry peers add office nas.example.org:53000
        ferry peers add desk '[2001:db8::20]:53000' --fingerprint \\
          87CB4D07A235018543FF415255E1558155AFBC3D74ADAEB33A1CB8968C4F916C
      """)

  @OptionGroup var logging: LogOptions

  @Argument(help: "The name to send to it by.")
  var name: String

  @Argument(help: "HOST:PORT ([IPv6]:PORT).")
  var address: String

  @Option(
    help: "The receiver's fingerprint, or a known peer's unique prefix.",
    completion: PeerCompletion.fingerprints)
  var fingerprint: String?

  func run() async throws {
    let store = KnownPeers()
    if let fingerprint, let digits = Fingerprint.prefixLength(of: fingerprint),
      digits < Fingerprint.minimumPrefixDigits
    {
      throw CLIFailure(
        status: .usage,
        message: "'\(DisplayText.escaping(fingerprint))' is \(digits) digits: a named key takes "
          + "at least \(Fingerprint.minimumPrefixDigits) of a known peer's, or all 64 (another "
          + "key can be made to match fewer)",
        code: .shortFingerprint)
    }
    let key = try fingerprint.map { text throws(CLIFailure) in
      try resolveFingerprint(text, in: store, allowUnknown: true)
    }
    let entry: KnownPeers.NamedAddress
    do {
      entry = try store.addNamed(name, address: address, fingerprint: key)
    } catch let error as NamedAddressError {
      let code: ErrorCode =
        switch error {
        case .invalidAddress: .invalidAddress
        case .invalidName: .invalidName
        case .tooMany: .usage
        }
      throw CLIFailure(status: .usage, message: error.description, code: code)
    } catch {
      throw CLIFailure(status: .transferFailed, message: "\(error)", code: .peersFile)
    }
    let pinned =
      key.map { " (key \($0.shortDescription))" } ?? " (its key is learnt at the first send)"
    EventWriter(json: false).note(
      "Named \(entry.address) '\(DisplayText.escaping(entry.name))'\(pinned): "
        + "ferry send --to '\(DisplayText.escaping(entry.name))' FILE")
  }
}

/// `ferry peers remove NAME`.
struct PeersRemoveCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "remove",
    abstract: "Remove a named address.",
    discussion: """
      Examples:
        ferry peers remove office
      """)

  @OptionGroup var logging: LogOptions

  @Argument(help: "The name given with 'ferry peers add'.")
  var name: String

  func run() async throws {
    let removed: Bool
    do {
      removed = try KnownPeers().removeNamed(name)
    } catch {
      throw CLIFailure(status: .transferFailed, message: error.description, code: .peersFile)
    }
    guard removed else {
      if let configured = RememberedRoute.configured.first(where: {
        $0.name.lowercased() == name.trimmingCharacters(in: .whitespaces).lowercased()
      }) {
        throw CLIFailure(
          status: .usage,
          message: "'\(DisplayText.escaping(configured.name))' is named in the config: remove its "
            + "[peers.\(configured.name)] table there",
          code: .unknownPeer)
      }
      throw CLIFailure(
        status: .usage, message: "no address is named '\(DisplayText.escaping(name))'",
        code: .unknownPeer)
    }
    EventWriter(json: false).note("Removed '\(DisplayText.escaping(name))'.")
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
