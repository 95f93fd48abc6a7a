import Foundation
import Testing

@testable import FerryCLI

/// `ferry doctor`'s reading of firewall rules: the JSON `nft -j list ruleset` prints (made by
/// the real nft, from rules in its own words, in a network namespace of the test's own) and
/// the text `iptables -S` prints.
@Suite("Firewall rules as ferry doctor reads them")
struct FirewallRulesTests {
  /// What `nft -j list ruleset` prints for one chain hooked at `hook` holding `rules`, loaded
  /// into a network namespace made for it (`unshare -n`: nothing of this machine's own).
  static func nftJSON(
    _ rules: [String], policy: String = "accept", hook: String = "input",
    table: String = "inet filter", chain: String = "input"
  ) throws -> String {
    let ruleset =
      "table \(table) {\n\tchain \(chain) {\n\t\ttype filter hook \(hook) priority filter; "
      + "policy \(policy);\n" + rules.map { "\t\t\($0)\n" }.joined() + "\t}\n}\n"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
    process.arguments = [
      "-n", "sh", "-c", "printf '%s' \"$1\" | nft -f - && nft -j list ruleset", "sh", ruleset,
    ]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "nft refused: \(ruleset)")
    return String(decoding: data, as: UTF8.self)
  }

  /// The findings for `rules` (``nftJSON(_:policy:hook:table:chain:)``).
  static func nft(
    _ rules: [String], policy: String = "accept", hook: String = "input", port: UInt16?
  ) throws -> FirewallRules {
    try #require(
      FirewallRules.nftables(json: nftJSON(rules, policy: policy, hook: hook), port: port))
  }

  @Test("mDNS and the port, alone, in sets and ranges; output chains and accepts are not drops")
  func nftables() throws {
    #expect(
      try Self.nft(["udp dport 5353 drop"], port: nil).findings.map(\.affects)
        == ["mdns"])
    #expect(
      try Self.nft(["udp dport { 53, 5353 } counter drop"], port: nil).findings
        .map(\.affects)
        == ["mdns"])
    #expect(
      try Self.nft(["tcp dport 50000-60000 reject with tcp reset"], port: 52000)
        .findings.map(\.affects) == ["port"])
    #expect(try Self.nft(["tcp dport 22 drop"], port: 52000).findings.isEmpty)
    #expect(
      try Self.nft(["meta l4proto udp drop"], port: nil).findings.map(\.affects)
        == ["mdns"])
    #expect(
      try Self.nft(["udp dport 5353 drop"], hook: "output", port: nil).findings
        .isEmpty)
    #expect(
      try Self.nft(["iif lo accept", "udp dport 5353 accept"], policy: "drop", port: 52000)
        .findings.map(\.affects) == ["port"])
    #expect(
      try Self.nft(["numgen random mod 100 < 2 drop"], port: nil).findings.map(\.affects)
        == ["loss"])
    #expect(try Self.nft([], port: 52000).findings.isEmpty)
    #expect(FirewallRules.nftables(json: "", port: 52000) == nil)
    // A catch-all reject after the accepts: only what was not accepted, and only "may".
    let catchAll = try Self.nft(
      ["udp dport 5353 accept", "reject with icmpx admin-prohibited"], port: 52000)
    #expect(catchAll.findings.map(\.affects) == ["port"])
    #expect(catchAll.findings.allSatisfy { !$0.definite })
  }

  @Test("iptables -S: rules, multiport, ranges, and a DROP policy")
  func iptables() {
    #expect(
      FirewallRules.iptables(
        "-P INPUT ACCEPT\n-A INPUT -p udp -m udp --dport 5353 -j DROP\n", port: nil
      )
      .findings.map(\.affects) == ["mdns"])
    #expect(
      FirewallRules.iptables(
        "-A INPUT -p tcp -m multiport --dports 22,52000 -j REJECT\n", port: 52000
      )
      .findings.map(\.affects) == ["port"])
    #expect(
      FirewallRules.iptables("-A INPUT -p tcp -m tcp --dport 50000:60000 -j DROP\n", port: 52000)
        .findings.map(\.affects) == ["port"])
    #expect(
      FirewallRules.iptables("-P INPUT DROP\n-A INPUT -p udp --dport 5353 -j ACCEPT\n", port: nil)
        .findings
        .isEmpty)
    #expect(
      FirewallRules.iptables("-P INPUT DROP\n", port: 52000).findings.map(\.affects) == [
        "mdns", "port",
      ])
    #expect(
      FirewallRules.iptables("-A OUTPUT -p udp --dport 5353 -j DROP\n", port: nil).findings.isEmpty)
    let reject = FirewallRules.iptables(
      "-A INPUT -p udp --dport 5353 -j ACCEPT\n-A INPUT -j REJECT --reject-with icmp-host-prohibited\n",
      port: 52000)
    #expect(reject.findings.map(\.affects) == ["port"])
    #expect(reject.findings.allSatisfy { !$0.definite })
  }

  @Test("the fix names the table and chain that drop it and inserts ahead; an accept first wins")
  func fixCommand() throws {
    let json = try Self.nftJSON(
      ["udp dport 5353 drop", "tcp dport 52000 drop"], table: "inet ftest", chain: "in_ferry")
    let findings = try #require(FirewallRules.nftables(json: json, port: 52000)).findings
    #expect(findings.map(\.affects) == ["mdns", "port"])
    #expect(
      findings.map { $0.acceptCommand(port: 52000) } == [
        "nft insert rule inet ftest in_ferry udp dport 5353 accept",
        "nft insert rule inet ftest in_ferry tcp dport 52000 accept",
      ])
    // An accept for some sources only leaves the drop for the rest.
    #expect(
      try Self.nft(["ip saddr 10.0.0.0/8 udp dport 5353 accept", "udp dport 5353 drop"], port: nil)
        .findings.map(\.affects) == ["mdns"])
    #expect(
      FirewallRules.iptables(
        "-A INPUT -s 10.0.0.0/8 -p udp --dport 5353 -j ACCEPT\n-A INPUT -p udp --dport 5353 -j DROP\n",
        port: nil
      ).findings.map(\.affects) == ["mdns"])
    // The doctor's own fix followed: the accept ahead of the drop.
    #expect(
      try Self.nft(["udp dport 5353 accept", "udp dport 5353 drop"], port: nil).findings.isEmpty)
    let iptables = FirewallRules.iptables(
      "-A INPUT -p udp --dport 5353 -j DROP\n", port: nil
    ).findings
    #expect(
      iptables.map { $0.acceptCommand(port: nil) } == [
        "iptables -I INPUT -p udp --dport 5353 -j ACCEPT"
      ])
    #expect(
      FirewallRules.iptables(
        "-A INPUT -p udp --dport 5353 -j ACCEPT\n-A INPUT -p udp --dport 5353 -j DROP\n", port: nil
      ).findings.isEmpty)
  }
}
