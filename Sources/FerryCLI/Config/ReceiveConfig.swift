import Ferry
import Foundation

/// The `[receive]` table of Ferry's config file: defaults for `ferry receive`'s options, which
/// its flags override (and `ferry daemon` receives by); and its `[daemon]` table
/// (``DaemonSettings``). Keys are the long flags' names with `_` for `-`, plus `accept`
/// ("ask", "trusted" or "yes": what `--accept-trusted` and `--yes` say).
///
/// The file is `--config FILE`, else `$FERRY_CONFIG`, else `config.toml` in Ferry's home
/// (``FerryHome/defaultDirectory``) when it exists. A key or table this version does not know
/// is an error, so that a misspelt `accept_form` never leaves a service asking nobody.
struct ReceiveConfig: Sendable, Equatable {
  /// Whom `accept` lets in without asking.
  enum Accept: String, Sendable, CaseIterable {
    case ask, trusted, yes
  }

  /// The file it was read from; nil when there was none.
  var path: String?
  var dir: String?
  /// The line `dir` is on, to name it when the folder is wrong.
  var dirLine: Int?
  var mkdir: Bool?
  var name: String?
  var accept: Accept?
  var acceptFrom: [String]?
  var port: UInt16?
  var onConflict: ConflictPolicy?
  var keepPartialDays: Double?
  var resumeGrace: Double?
  var service: String?
  /// Also receive from LocalSend apps (`--localsend`).
  var localsend: Bool?
  /// The `[daemon]` table: what only `ferry daemon` reads.
  var daemon = DaemonSettings()
  /// The `[peers.NAME]` tables: addresses named in the config, for `ferry send --to NAME`.
  var peers: [ConfigPeer] = []
  /// `[discovery] domains`: unicast DNS-SD domains `send` and `browse` look in besides the
  /// local network.
  var domains: [BrowseDomain] = []
  /// `[discovery] localsend_scan`: the addresses asked by `POST /register` where LocalSend's
  /// multicast does not reach (``ScanRange``).
  var localSendScan: [String] = []

  /// No file: every option takes its flag or its default.
  init() {}

  /// The `[receive]` table of `file`, read from `path`; relative folders are taken from the
  /// file's own folder, and `~/` from the home folder.
  ///
  /// - Throws: ``ConfigError`` for an unknown table or key, or a value of the wrong kind.
  init(_ file: ConfigFile, path: String) throws(ConfigError) {
    self.path = path
    peers = try ConfigPeer.all(in: file)
    for (table, pairs) in file.tables
    where table != "receive" && table != "daemon" && table != "discovery"
      && !table.hasPrefix(ConfigPeer.tablePrefix)
    {
      guard pairs.isEmpty, table.isEmpty else {
        let line = file.tableLines[table] ?? pairs.values.map(\.line).min() ?? 0
        throw ConfigError(
          line: line,
          message: table.isEmpty
            ? "settings go in a table: put [receive] above them"
            : "unknown table [\(table)] (this version of ferry reads [receive], [daemon], "
              + "[discovery] and [peers.NAME])")
      }
    }
    for (key, value) in file.tables["discovery"] ?? [:] {
      if key == "localsend_scan" {
        localSendScan = try ScanRange.addresses(value.strings(key), line: value.line)
        continue
      }
      guard key == "domains" else {
        throw ConfigError(
          line: value.line,
          message: "unknown key '\(key)' in [discovery] (known: domains, localsend_scan)")
      }
      for text in try value.strings(key) {
        do {
          domains.append(try BrowseDomain(text))
        } catch {
          throw ConfigError(line: value.line, message: error.description)
        }
      }
    }
    for (key, value) in (file.tables["daemon"] ?? [:]).sorted(by: { $0.value.line < $1.value.line })
    {
      switch key {
      case "notify": daemon.notify = try value.boolean(key)
      case "outbox_days": daemon.outboxDays = try value.number(key, in: 0.01...3650)
      case "history": daemon.history = try value.integer(key, in: 10...100_000)
      case "socket": daemon.socket = Self.folder(try value.string(key), relativeTo: path)
      case "ui": daemon.ui = try value.boolean(key)
      case "ui_port": daemon.uiPort = try value.integer(key, in: 0...65535)
      default:
        throw ConfigError(
          line: value.line,
          message:
            "unknown key '\(key)' in [daemon] (known: \(DaemonSettings.keys.joined(separator: ", ")))"
        )
      }
    }
    for (key, value) in (file.tables["receive"] ?? [:]).sorted(by: { $0.value.line < $1.value.line }
    ) {
      switch key {
      case "dir":
        dir = Self.folder(try value.string(key), relativeTo: path)
        dirLine = value.line
      case "mkdir": mkdir = try value.boolean(key)
      case "name": name = try value.string(key)
      case "accept": accept = try value.choice(key, of: Accept.self)
      case "accept_from": acceptFrom = try value.strings(key)
      case "port": port = UInt16(try value.integer(key, in: 0...65_535))
      case "on_conflict": onConflict = try value.choice(key, of: ConflictPolicy.self)
      case "keep_partial_days": keepPartialDays = try value.number(key, in: 0...36_500)
      case "resume_grace": resumeGrace = try value.number(key, in: 0...86_400)
      case "service": service = try value.string(key)
      case "localsend": localsend = try value.boolean(key)
      default:
        throw ConfigError(
          line: value.line,
          message: "unknown key '\(key)' in [receive] (known: \(Self.keys.joined(separator: ", ")))"
        )
      }
    }
  }

  /// The keys `[receive]` takes.
  static let keys = [
    "dir", "mkdir", "name", "accept", "accept_from", "port", "on_conflict", "keep_partial_days",
    "resume_grace", "service", "localsend",
  ]

  /// The config for this run: `--config FILE` when given, else `$FERRY_CONFIG`, else
  /// `config.toml` in Ferry's home if it exists; none otherwise.
  ///
  /// - Throws: ``CLIFailure`` (usage, `invalid-config`) naming the file and line.
  static func load(explicit: String?) throws(CLIFailure) -> ReceiveConfig {
    let environment = ProcessInfo.processInfo.environment["FERRY_CONFIG"].flatMap {
      $0.isEmpty ? nil : $0
    }
    let path: String
    if let given = explicit ?? environment {
      path = given
    } else {
      let home = FerryHome.defaultDirectory.appendingPathComponent("config.toml").path
      guard FileManager.default.fileExists(atPath: home) else { return ReceiveConfig() }
      path = home
    }
    do {
      return try ReceiveConfig(ConfigFile(contentsOf: path), path: path)
    } catch {
      let place = error.line > 0 ? "\(path):\(error.line)" : path
      throw CLIFailure(
        status: .usage,
        // The message is Ferry's own words around the file's text; it is made terminal-safe
        // where it is printed (escaping it here would show its quotes as \").
        message: "config \(DisplayText.escaping(place)): \(error.message)",
        code: .invalidConfig)
    }
  }

  /// `text` with `~/` expanded, relative to the folder of the file at `path`.
  private static func folder(_ text: String, relativeTo path: String) -> String {
    if text == "~" { return FerryHome.userHome.path }
    if text.hasPrefix("~/") {
      return FerryHome.userHome.appendingPathComponent(String(text.dropFirst(2))).path
    }
    if text.hasPrefix("/") || text.isEmpty { return text }
    let base = URL(fileURLWithPath: path).deletingLastPathComponent()
    return base.appendingPathComponent(text).standardizedFileURL.path
  }
}

extension ConfigValue {
  fileprivate func string(_ key: String) throws(ConfigError) -> String {
    guard case .string(let text) = kind else { throw wrong(key, "a string in quotes") }
    return text
  }

  fileprivate func boolean(_ key: String) throws(ConfigError) -> Bool {
    guard case .boolean(let value) = kind else { throw wrong(key, "true or false") }
    return value
  }

  fileprivate func strings(_ key: String) throws(ConfigError) -> [String] {
    guard case .array(let elements) = kind else { throw wrong(key, "a list of strings") }
    var texts: [String] = []
    for element in elements {
      guard case .string(let text) = element.kind else { throw wrong(key, "a list of strings") }
      texts.append(text)
    }
    return texts
  }

  fileprivate func integer(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int {
    guard case .integer(let value) = kind, range.contains(value) else {
      throw wrong(key, "a whole number from \(range.lowerBound) to \(range.upperBound)")
    }
    return value
  }

  fileprivate func number(_ key: String, in range: ClosedRange<Double>) throws(ConfigError)
    -> Double
  {
    let number: Double
    switch kind {
    case .integer(let value): number = Double(value)
    case .float(let value): number = value
    default: throw wrong(key, "a number from \(Int(range.lowerBound)) to \(Int(range.upperBound))")
    }
    guard range.contains(number) else {
      throw wrong(key, "a number from \(Int(range.lowerBound)) to \(Int(range.upperBound))")
    }
    return number
  }

  fileprivate func choice<Choice: RawRepresentable & CaseIterable>(
    _ key: String, of: Choice.Type
  ) throws(ConfigError) -> Choice where Choice.RawValue == String {
    let choices = Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
    guard case .string(let text) = kind, let choice = Choice(rawValue: text) else {
      throw wrong(key, "one of \(choices)")
    }
    return choice
  }

  private func wrong(_ key: String, _ expected: String) -> ConfigError {
    ConfigError(line: line, message: "'\(key)' wants \(expected), not \(describe)")
  }

  /// The value as the message shows it.
  private var describe: String {
    switch kind {
    case .string(let text): "\"\(text.count > 40 ? String(text.prefix(40)) + "…" : text)\""
    case .integer(let value): "\(value)"
    case .float(let value): "\(value)"
    case .boolean(let value): "\(value)"
    case .array: "a list"
    }
  }
}
