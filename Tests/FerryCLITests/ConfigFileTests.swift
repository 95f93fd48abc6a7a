import Foundation
import Testing

@testable import FerryCLI

/// The config file parser, fed what a careless or hostile editor writes: every mistake is an
/// error naming its line, never a trap, never a value silently taken.
@Suite("The config file ([receive] in config.toml)")
struct ConfigFileTests {
  static func parse(_ text: String) throws(ConfigError) -> ReceiveConfig {
    try ReceiveConfig(ConfigFile(parsing: Array(text.utf8)), path: "/etc/ferry/config.toml")
  }

  static func error(_ text: String) -> ConfigError? {
    do {
      _ = try parse(text)
      return nil
    } catch {
      return error
    }
  }

  @Test("the shipped example parses, and says what the service needs")
  func shippedExample() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let text = try String(
      contentsOf: root.appending(path: "contrib/systemd/config.toml"), encoding: .utf8)
    let config = try Self.parse(text)
    #expect(config.dir == "/var/lib/ferry/inbox")
    #expect(config.accept == .trusted)
    #expect(config.port == 52000)
    #expect(config.onConflict == .rename)
  }

  @Test("every key, with comments, CRLF, literal strings, escapes and a list over lines")
  func everyKey() throws {
    let config = try Self.parse(
      "# defaults\r\n[receive]  # the table\r\n"
        + "dir = 'inbox'\nmkdir = true\nname = \"Kitchen \\\"laptop\\\" \\u00e9\"\n"
        + "accept = \"yes\"\naccept_from = [\n  \"9F2C41AB0C3D7E11\", # one\n  'AB',\n]\n"
        + "port = 52_000\non_conflict = \"skip\"\nkeep_partial_days = 1.5\n"
        + "resume_grace = 0\nservice = \"ferry-test\"\n")
    #expect(config.dir == "/etc/ferry/inbox")
    #expect(config.mkdir == true)
    #expect(config.name == "Kitchen \"laptop\" é")
    #expect(config.accept == .yes)
    #expect(config.acceptFrom == ["9F2C41AB0C3D7E11", "AB"])
    #expect(config.port == 52000)
    #expect(config.onConflict == .skip)
    #expect(config.keepPartialDays == 1.5)
    #expect(config.resumeGrace == 0)
    #expect(config.service == "ferry-test")
  }

  @Test("[peers.NAME] tables name addresses, with or without a key, in their order")
  func namedPeers() throws {
    let key = String(repeating: "AB", count: 32)
    let config = try Self.parse(
      """
      [receive]
      port = 53000
      [peers.office]
      address = "nas.example.org:53000"
      [peers.desk-6]
      fingerprint = "\(key)"
      address = "[2001:db8::20]:53000"
      """)
    #expect(config.port == 53000)
    let domains = try Self.parse("[discovery]\ndomains = [\"Example.test\", \"b.test\"]\n").domains
    #expect(domains.map(\.name) == ["example.test", "b.test"])
    let scan = try Self.parse(
      "[discovery]\nlocalsend_scan = [\"10.0.0.5\", \"10.0.1.0/30\", \"10.0.0.5\", \"10.0.2.0/22\"]\n"
    ).localSendScan
    // A block's network and broadcast addresses left out; each address once.
    #expect(scan.prefix(3) == ["10.0.0.5", "10.0.1.1", "10.0.1.2"])
    // 10.0.2.0/22 is 10.0.0.0/22: its 1022 addresses hold the three before.
    #expect(scan.count == 1022)
    #expect(scan.first { $0 == "10.0.0.0" } == nil && scan.last == "10.0.3.254")
    #expect(config.peers.map(\.name) == ["office", "desk-6"])
    #expect(
      config.peers.map(\.address.description) == [
        "nas.example.org:53000", "[2001:db8::20]:53000",
      ])
    #expect(config.peers[0].fingerprint == nil)
    #expect(config.peers[1].fingerprint?.hexString == key)
  }

  @Test("an empty file, or only comments, is no settings at all")
  func empty() throws {
    #expect(
      try Self.parse("") == ReceiveConfig(ConfigFile(parsing: []), path: "/etc/ferry/config.toml"))
    #expect(try Self.parse("# nothing\n\n[receive]\n").dir == nil)
  }

  @Test(
    "mistakes name their line",
    arguments: [
      ("[receive]\naccept_form = [\"AB\"]\n", 2, "unknown key 'accept_form'"),
      ("[recieve]\ndir = \"x\"\n", 1, "unknown table [recieve]"),
      ("dir = \"x\"\n", 1, "put [receive] above them"),
      ("[receive]\nport = 70000\n", 2, "from 0 to 65535"),
      ("[receive]\nport = -1\n", 2, "from 0 to 65535"),
      ("[receive]\nport = \"52000\"\n", 2, "wants a whole number"),
      ("[receive]\nport = 99999999999999999999999\n", 2, "too large"),
      ("[receive]\naccept = \"always\"\n", 2, "one of \"ask\", \"trusted\", \"yes\""),
      ("[receive]\naccept = yes\n", 2, "strings go in quotes"),
      ("[receive]\ndir = \"a\"\ndir = \"b\"\n", 3, "given twice"),
      ("[receive]\n[receive]\n", 2, "given twice"),
      ("[receive]\ndir = \"open\n", 2, "not closed on its line"),
      ("[receive]\ndir = \"a\u{1B}[2J\"\n", 2, "control character"),
      ("[receive]\ndir = \"a\\u001b\"\n", 2, "printable character"),
      ("[receive]\ndir = \"a\\q\"\n", 2, "not an escape"),
      ("[receive]\nname = \"a\\nb\"\n", 2, "is a control character"),
      ("[receive]\nname = \"a\\tb\"\n", 2, "is a control character"),
      ("[receive]\ndir = \"a\" \"b\"\n", 2, "unexpected text"),
      ("[receive]\nresume_grace = 1e999\n", 2, "not a number"),
      ("[receive]\nresume_grace = nan\n", 2, "not a value"),
      ("[receive]\nresume_grace = 1__0\n", 2, "not a number"),
      ("[receive]\nkeep_partial_days = -1\n", 2, "from 0 to 36500"),
      ("[receive]\naccept_from = [\"a\", 1]\n", 2, "a list of strings"),
      ("[receive]\naccept_from = [\"a\"\n", 3, "not closed"),
      ("[receive]\naccept_from = [\"a\" \"b\"]\n", 2, "',' or ']'"),
      ("[receive]\nmkdir = 1\n", 2, "true or false"),
      ("[receive\n", 1, "']'"),
      ("[receive]\n= 3\n", 2, "cannot start a key"),
      ("[receive]\ndir =\n", 2, "value is missing"),
      ("[peers.office]\nfingerprint = \"AB\"\n", 2, "64 hexadecimal digits"),
      ("[peers.office]\nport = 5\n", 2, "unknown key 'port' in [peers.office]"),
      ("[peers.office]\n", 1, "needs an address"),
      ("[peers.office]\naddress = \"nas\"\n", 2, "HOST:PORT"),
      ("[peers.office]\naddress = \"[::1]:0\"\n", 2, "HOST:PORT"),
      ("[peers.office]\naddress = 53000\n", 2, "a string in quotes"),
      ("[peers.cafe]\naddress = \"nas:1\"\n", 1, "reads as a fingerprint"),
      ("[peers.]\n", 1, "cannot start a key"),
      ("[peers.a.b]\naddress = \"n:1\"\n", 1, "nested too deep"),
      ("[other.x]\n", 1, "unknown table [other.x]"),
      ("[discovery]\ndomains = [\"bad..test\"]\n", 2, "not a DNS domain"),
      ("[discovery]\ndomains = \"a.test\"\n", 2, "a list of strings"),
      ("[discovery]\nbrowse = [\"a.test\"]\n", 2, "unknown key 'browse' in [discovery]"),
      ("[discovery]\nlocalsend_scan = [\"10.0.0.0/21\"]\n", 2, "larger than /22"),
      ("[discovery]\nlocalsend_scan = [\"10.0.0.256\"]\n", 2, "not an IPv4 address"),
      ("[discovery]\nlocalsend_scan = [\"10.0.0.1/33\"]\n", 2, "not an IPv4 address"),
      ("[discovery]\nlocalsend_scan = [\"10.0.0/24\"]\n", 2, "not an IPv4 address"),
      ("[discovery]\nlocalsend_scan = [\"fe80::1\"]\n", 2, "not an IPv4 address"),
      ("[discovery]\nlocalsend_scan = [\"10.0.0.1/+4\"]\n", 2, "not an IPv4 address"),
      ("[discovery]\nlocalsend_scan = [\" 10.0.0.1\"]\n", 2, "not an IPv4 address"),
      (
        "[discovery]\nlocalsend_scan = [\"10.0.0.0/22\", \"10.0.8.0/30\", \"10.1.0.0/24\"]\n", 2,
        "more than 1024 addresses"
      ),
      ("[peers.x]\naddress = \"n:1\"\n[peers.x]\n", 3, "given twice"),
    ])
  func mistakes(text: String, line: Int, words: String) {
    let error = Self.error(text)
    #expect(error?.line == line, "\(String(describing: error)) for \(text.debugDescription)")
    #expect(error?.message.contains(words) == true, "\(String(describing: error))")
  }

  @Test("not UTF-8, too large, or nested without end: refused as a whole, no trap")
  func hostileFiles() {
    #expect(throws: ConfigError.self) { try ConfigFile(parsing: [0x5B, 0xFF, 0xFE, 0x5D]) }
    #expect(throws: ConfigError.self) {
      try ConfigFile(
        parsing: Array(repeating: UInt8(ascii: "#"), count: ConfigFile.maximumSize + 1))
    }
    let deep = "[receive]\naccept_from = " + String(repeating: "[", count: 1000) + "\n"
    #expect(Self.error(deep)?.message.contains("nested too deep") == true)
    #expect(Self.error("[receive]\ndir = \"\\u")?.line == 2)
    #expect(Self.error("[receive]\ndir = \"\\")?.line == 2)
    #expect(Self.error("[receive]\nport = -")?.line == 2)
    #expect(Self.error("[receive]\nport = +")?.line == 2)
    #expect(Self.error("[receive]\nport = _1")?.line == 2)
  }

  @Test("~/ is the home folder; a relative folder is the config file's")
  func folders() throws {
    #expect(try Self.parse("[receive]\ndir = \"~/Inbox\"\n").dir?.hasSuffix("/Inbox") == true)
    #expect(try Self.parse("[receive]\ndir = \"~/Inbox\"\n").dir?.hasPrefix("~") == false)
    #expect(try Self.parse("[receive]\ndir = \"../in\"\n").dir == "/etc/in")
    #expect(try Self.parse("[receive]\ndir = \"/srv/in\"\n").dir == "/srv/in")
  }
}
