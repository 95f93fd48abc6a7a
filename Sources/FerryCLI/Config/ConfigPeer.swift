import Ferry

/// A `[peers.NAME]` table of the config file: an address named by whoever wrote the config
/// (an administrator, say), as `ferry peers add NAME HOST:PORT [--fingerprint FPR]` names one
/// in `peers.json`. `peers.json` goes first: a name added there (or whose key its first contact
/// proved) stands for it.
///
/// ```toml
/// [peers.office]
/// address = "nas.example.org:53000"
/// fingerprint = "87CB4D07A235018543FF415255E1558155AFBC3D74ADAEB33A1CB8968C4F916C"
/// ```
struct ConfigPeer: Sendable, Equatable {
  /// What starts the name of such a table.
  static let tablePrefix = "peers."
  /// The keys such a table takes.
  static let keys = ["address", "fingerprint"]

  /// NAME.
  let name: String
  /// `address`, a `HOST:PORT`.
  let address: HostPort
  /// `fingerprint`, when given.
  let fingerprint: Fingerprint?

  /// The named address as `ferry send` uses one.
  var named: KnownPeers.NamedAddress {
    KnownPeers.NamedAddress(
      name: name, address: address.description, fingerprint: fingerprint?.hexString,
      added: .distantPast)
  }

  /// Every `[peers.NAME]` table of `file`, in the order of their lines.
  ///
  /// - Throws: ``ConfigError`` for a table without an address, an address that is not
  ///   `HOST:PORT`, a fingerprint that is not 64 hex digits, a name that is hex digits alone,
  ///   or another key.
  static func all(in file: ConfigFile) throws(ConfigError) -> [ConfigPeer] {
    var peers: [ConfigPeer] = []
    let tables = file.tables.filter { $0.key.hasPrefix(tablePrefix) }
      .sorted { (file.tableLines[$0.key] ?? 0) < (file.tableLines[$1.key] ?? 0) }
    for (table, pairs) in tables {
      let line = file.tableLines[table] ?? 0
      let name = String(table.dropFirst(tablePrefix.count))
      guard !name.contains(".") else {
        throw ConfigError(
          line: line, message: "[\(table)] is nested too deep: name a peer [peers.NAME]")
      }
      guard Fingerprint.prefixLength(of: name) == nil else {
        throw ConfigError(
          line: line,
          message: "[\(table)]: a name of hexadecimal digits alone reads as a fingerprint")
      }
      var address: HostPort?
      var fingerprint: Fingerprint?
      for (key, value) in pairs.sorted(by: { $0.value.line < $1.value.line }) {
        guard keys.contains(key) else {
          throw ConfigError(
            line: value.line,
            message: "unknown key '\(key)' in [\(table)] (known: \(keys.joined(separator: ", ")))")
        }
        guard case .string(let text) = value.kind else {
          throw ConfigError(
            line: value.line, message: "'\(key)' must be a string in quotes, not \(value.kindName)")
        }
        switch key {
        case "address":
          guard let parsed = HostPort(text) else {
            throw ConfigError(
              line: value.line,
              message: "'address' must be HOST:PORT (IPv6 in brackets), a port from 1 to 65535")
          }
          address = parsed
        case "fingerprint":
          guard let parsed = try? Fingerprint(parsing: text) else {
            throw ConfigError(
              line: value.line, message: "'fingerprint' must be 64 hexadecimal digits")
          }
          fingerprint = parsed
        default:
          break
        }
      }
      guard let address else {
        throw ConfigError(line: line, message: "[\(table)] needs an address = \"HOST:PORT\"")
      }
      peers.append(ConfigPeer(name: name, address: address, fingerprint: fingerprint))
    }
    return peers
  }
}
