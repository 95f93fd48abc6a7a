import Ferry
import FerryAgent
import Foundation

/// A `--to` receiver found where discovery does not go: at an address the user named
/// (`ferry peers add`), or one this machine reached it at before (``KnownPeers/Entry/addresses``).
/// Whatever answers there proves its key in the TLS handshake: a remembered address is pinned
/// to the key it was remembered for, a named one to its key once known.
enum RememberedRoute: Sendable {
  /// A remembered address of a known key.
  case remembered(Remembered)
  /// A named address (`ferry peers add`, or the config's `[peers.NAME]`), tried at once: no
  /// discovery.
  case named(KnownPeers.NamedAddress, HostPort)

  /// A known key and one address it was reached at.
  struct Remembered: Sendable {
    let fingerprint: Fingerprint
    let name: String
    let address: HostPort
  }

  /// How long discovery looks alone before remembered addresses are tried beside it.
  static let wait: Duration = .seconds(2)
  /// How long remembered addresses have to answer a TCP connect, all at once.
  static let answerTimeout: Duration = .seconds(3)

  /// The known peers reached at remembered addresses, the `limit` reached last first.
  static func lastReached(_ limit: Int, in knownPeers: KnownPeers) -> [KnownPeers.Entry] {
    Array(
      ((try? knownPeers.all()) ?? []).filter { $0.addresses?.isEmpty == false }
        .sorted { ($0.reachedAt ?? .distantPast) > ($1.reachedAt ?? .distantPast) }
        .prefix(limit))
  }

  /// The config's `[peers.NAME]` tables (``ConfigPeer``).
  static var configured: [ConfigPeer] { SharedConfig.peers }

  /// The named address `text` names, if any (letter case and surrounding spaces ignored): one
  /// named with `ferry peers add`, else a `[peers.NAME]` table of the config.
  static func named(_ text: String, in knownPeers: KnownPeers) throws(CLIFailure) -> Self? {
    var named: KnownPeers.NamedAddress?
    do {
      named = try knownPeers.namedAddress(text)
    } catch {
      throw CLIFailure(status: .transferFailed, message: error.description, code: .peersFile)
    }
    if named == nil {
      let wanted = text.trimmingCharacters(in: .whitespaces).lowercased()
      named = configured.first { $0.name.lowercased() == wanted }?.named
    }
    guard let named else { return nil }
    // A key that cannot be read must not make the address a first contact again.
    if let key = named.fingerprint, (try? Fingerprint(parsing: key)) == nil {
      throw CLIFailure(
        status: .usage,
        message: "the key named '\(DisplayText.escaping(named.name))' is not a fingerprint "
          + "(\(DisplayText.quoted(key))): add it again with 'ferry peers add'",
        code: .invalidFingerprint)
    }
    guard let address = HostPort(named.address) else {
      throw CLIFailure(
        status: .usage,
        message: "the address named '\(DisplayText.escaping(named.name))' is not HOST:PORT "
          + "(\(DisplayText.quoted(named.address))): add it again with 'ferry peers add'",
        code: .invalidAddress)
    }
    return .named(try pinnedToTrust(named, in: knownPeers), address)
  }

  /// `named`, held to the key of a trusted peer of the same name (`ferry trust FPR --name N`):
  /// a name pinned to a key is not a first contact with whatever answers at an address.
  ///
  /// - Throws: ``CLIFailure`` (`key-changed`, exit 5) when the address names another key than
  ///   the trusted peer's; (`ambiguous-peer`) when several trusted keys have the name.
  private static func pinnedToTrust(_ named: KnownPeers.NamedAddress, in knownPeers: KnownPeers)
    throws(CLIFailure) -> KnownPeers.NamedAddress
  {
    let wanted = named.name.trimmingCharacters(in: .whitespaces).lowercased()
    let trusted = ((try? knownPeers.all()) ?? []).filter {
      $0.trusted && $0.name.trimmingCharacters(in: .whitespaces).lowercased() == wanted
    }
    guard !trusted.isEmpty else { return named }
    let shown = DisplayText.escaping(named.name)
    if let key = named.fingerprint {
      guard trusted.contains(where: { $0.fingerprint == key.uppercased() }) else {
        throw CLIFailure(
          status: .authentication,
          message: "'\(shown)' is a trusted peer's name with another key than the address named "
            + "'\(shown)': send by fingerprint, or name the address again with the trusted key "
            + "(ferry peers add '\(shown)' \(named.address) --fingerprint KEY)",
          code: .keyChanged)
      }
      return named
    }
    guard trusted.count == 1 else {
      throw CLIFailure(
        status: .usage,
        message: "'\(shown)' is the name of several trusted peers: name the address with "
          + "--fingerprint",
        code: .ambiguousPeer)
    }
    var pinned = named
    pinned.fingerprint = trusted[0].fingerprint
    return pinned
  }

  /// The remembered addresses of the known keys `reference` stands for: by fingerprint (a
  /// nickname's keys included) or, for a plain name, the one known key that went by it — when
  /// exactly one known peer has that name and its key holds it (a name pinned to another key,
  /// or one that looks like a pinned one, stands for no remembered key).
  static func remembered(for reference: PeerReference, in knownPeers: KnownPeers)
    -> [Remembered]
  {
    let entries = (try? knownPeers.all()) ?? []
    var chosen: [(Fingerprint, KnownPeers.Entry)] = []
    for entry in entries {
      guard let fingerprint = try? Fingerprint(parsing: entry.fingerprint),
        reference.matchesFingerprint(fingerprint)
      else { continue }
      chosen.append((fingerprint, entry))
    }
    if chosen.isEmpty, case .name(_, known: nil) = reference {
      let named = entries.filter { reference.matchesName($0.name) }
      if named.count == 1, let fingerprint = try? Fingerprint(parsing: named[0].fingerprint),
        let peer = try? PeerID(displayName: named[0].name, fingerprint: fingerprint),
        (try? knownPeers.status(of: peer)) == .known(trusted: named[0].trusted)
      {
        chosen = [(fingerprint, named[0])]
      }
    }
    return chosen.flatMap { fingerprint, entry in
      (entry.addresses ?? []).compactMap(HostPort.init).map {
        Remembered(fingerprint: fingerprint, name: entry.name, address: $0)
      }
    }
  }

  /// Of `routes` (most recently reached first), the first among those that accept a TCP
  /// connection within `timeout` (at most ``answerTimeout``), all tried at once; nil when none
  /// does.
  static func firstAnswering(_ routes: [Remembered], within timeout: Duration) async
    -> Remembered?
  {
    let answered = await TCPAnswers.answering(
      routes.map { (host: $0.address.host, port: Int($0.address.port)) },
      within: min(timeout, answerTimeout))
    return answered.first.map { routes[$0] }
  }
}
