import Foundation
import Testing

@testable import Ferry

/// Where known peers were reached and the addresses the user named (issue 41): every value that
/// comes from a user or a file is checked as bytes, and stays bounded.
@Suite("Remembered and named addresses")
struct PeerAddressesTests {
  private func store() -> (KnownPeers, URL) {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-addresses-\(UUID().uuidString)")
    return (KnownPeers(directory: directory), directory)
  }

  @Test("HOST:PORT: names, IP literals, IPv6 in brackets; nothing else")
  func hostPort() {
    #expect(HostPort("nas.example.org:53000")?.description == "nas.example.org:53000")
    #expect(HostPort("10.1.2.3:1")?.port == 1)
    #expect(HostPort("[2001:db8::20]:65535")?.host == "2001:db8::20")
    #expect(HostPort("[2001:db8::20]:65535")?.description == "[2001:db8::20]:65535")
    #expect(HostPort("[fe80::1%mdns0]:80")?.host == "fe80::1%mdns0")
    let refused = [
      "", ":", "host", "host:", ":80", "host:0", "host:65536", "host:-1", "host:+80",
      "host:080000", "2001:db8::20:80", "[]:80", "ho st:80", "host\n:80", "héllo:80",
      "host\u{202E}:80", "a;rm -rf:80", String(repeating: "a", count: 254) + ":80",
      "[::1:80", "host:8 0",
    ]
    for text in refused { #expect(HostPort(text) == nil, "\(text.debugDescription)") }
    #expect(HostPort(String(repeating: "a", count: 253) + ":80") != nil)
  }

  @Test("a browse domain is a DNS name, checked as bytes; 'local' and a trailing dot are folded")
  func browseDomains() throws {
    #expect(try BrowseDomain("Example.TEST.").name == "example.test")
    #expect(try BrowseDomain("a-b_c.example.org").name == "a-b_c.example.org")
    #expect(try BrowseDomain(String(repeating: "a", count: 63) + ".org").name.count == 67)
    let refused = [
      "", ".", "bad..domain", ".lead", "sp ace.org", "ex\u{0}ample.org", "bücher.de",
      String(repeating: "a", count: 64) + ".org",
      String(repeating: "abcdefghi.", count: 26) + "org", "a/b", "a\n.org",
    ]
    for text in refused {
      #expect(throws: BrowseDomainError.self, "\(text.debugDescription)") {
        try BrowseDomain(text)
      }
    }
    let browser = try? Browser(
      serviceType: .ferry,
      domains: [try BrowseDomain("local"), try BrowseDomain("x.test"), try BrowseDomain("X.test")])
    defer { browser?.stop() }
    if let browser { #expect(browser.domains.map(\.name) == ["x.test"]) }
  }

  @Test("reached addresses: most recent first, deduplicated, at most four, only for known keys")
  func reached() throws {
    let (store, directory) = store()
    defer { try? FileManager.default.removeItem(at: directory) }
    let peer = try PeerID(displayName: "desk", fingerprint: Identity.generate().fingerprint)
    let stranger = Identity.generate().fingerprint
    try store.recordReached(stranger, at: ["10.0.0.9:5000"])
    #expect(try store.all().isEmpty)
    try store.recordSeen(peer)
    try store.recordReached(peer.fingerprint, at: ["10.0.0.1:5000", "junk", "[fd00::1]:5000"])
    #expect(try store.all()[0].addresses == ["10.0.0.1:5000", "[fd00::1]:5000"])
    for index in 2...7 {
      try store.recordReached(peer.fingerprint, at: ["10.0.0.\(index):5000"])
    }
    try store.recordReached(peer.fingerprint, at: ["10.0.0.5:5000"])
    let entry = try #require(try KnownPeers(directory: directory).all().first)
    #expect(
      entry.addresses == ["10.0.0.5:5000", "10.0.0.7:5000", "10.0.0.6:5000", "10.0.0.4:5000"])
    #expect(entry.reachedAt != nil)
    #expect(try store.forgetAddress("10.0.0.7:5000", of: peer.fingerprint))
    #expect(try store.forgetAddress("10.0.0.7:5000", of: peer.fingerprint) == false)
    #expect(try store.all()[0].addresses?.count == 3)
    // Forgetting the peer forgets where it was.
    try store.forget(peer.fingerprint)
    try store.recordSeen(peer)
    #expect(try store.all()[0].addresses == nil)
  }

  @Test("a peers file written before addresses existed still reads, and keeps its peers")
  func olderFile() throws {
    let (store, directory) = store()
    defer { try? FileManager.default.removeItem(at: directory) }
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let fingerprint = Identity.generate().fingerprint.hexString
    let old = """
      {"version":1,"peers":[{"fingerprint":"\(fingerprint)","name":"old","firstSeen":\
      "2026-01-01T00:00:00Z","lastSeen":"2026-01-02T00:00:00Z","trusted":true}]}
      """
    try Data(old.utf8).write(to: directory.appendingPathComponent("peers.json"))
    #expect(try store.all().map(\.name) == ["old"])
    #expect(try store.namedAddresses().isEmpty)
    _ = try store.addNamed("office", address: "nas:53000", fingerprint: nil)
    #expect(try store.all().map(\.trusted) == [true])
  }

  @Test("named addresses: one per name whatever its case, checked names and addresses, bounded")
  func named() throws {
    let (store, directory) = store()
    defer { try? FileManager.default.removeItem(at: directory) }
    let key = Identity.generate().fingerprint
    _ = try store.addNamed(" Office ", address: "nas.example.org:53000", fingerprint: nil)
    _ = try store.addNamed("office", address: "[2001:db8::5]:53000", fingerprint: key)
    let named = try store.namedAddresses()
    #expect(named.map(\.name) == ["office"])
    #expect(named[0].address == "[2001:db8::5]:53000")
    #expect(try store.namedAddress("  OFFICE")?.fingerprint == key.hexString)
    for name in [
      "", "   ", "cafe", "9F2C41AB", "a\u{200B}b", "tab\there", String(repeating: "x", count: 65),
    ] {
      #expect(throws: NamedAddressError.invalidName(name)) {
        try store.addNamed(name, address: "nas:1", fingerprint: nil)
      }
    }
    #expect(throws: NamedAddressError.invalidAddress("nas")) {
      try store.addNamed("nas", address: "nas", fingerprint: nil)
    }
    for index in 1..<KnownPeers.maximumNamedAddresses {
      _ = try store.addNamed("n\(index)", address: "10.0.0.1:\(index)", fingerprint: nil)
    }
    #expect(throws: NamedAddressError.tooMany) {
      try store.addNamed("one more", address: "10.0.0.1:1", fingerprint: nil)
    }
    // Replacing a name is not one more.
    _ = try store.addNamed("n1", address: "10.0.0.2:1", fingerprint: nil)
    #expect(try store.removeNamed("OFFICE"))
    #expect(try store.removeNamed("office") == false)
  }

  @Test("a key learnt at the first contact is the name's; a named key is never replaced")
  func learnt() throws {
    let (store, directory) = store()
    defer { try? FileManager.default.removeItem(at: directory) }
    let first = Identity.generate().fingerprint
    let second = Identity.generate().fingerprint
    _ = try store.addNamed("office", address: "nas:53000", fingerprint: nil)
    try store.learnKey(first, ofNamed: "Office")
    try store.learnKey(second, ofNamed: "office")
    #expect(try store.namedAddress("office")?.fingerprint == first.hexString)
  }
}
