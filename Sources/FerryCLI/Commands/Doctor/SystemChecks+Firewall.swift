import Ferry
import FerryAgent
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The check of `ferry doctor` that reads the firewall rules (nftables, iptables).
extension SystemChecks {
  /// Reads the nftables and iptables rules for drops of UDP 5353 and the receiver's port.
  /// What nft's and iptables' rules (as readable here) do to `targets`: the findings, the
  /// tools read, and those that could not be (not root).
  static func rules(_ targets: [FirewallRules.Target]) async -> (
    findings: [FirewallRules.Finding], read: [String], unread: [String]
  ) {
    var findings: [FirewallRules.Finding] = []
    var read: [String] = []
    var unread: [String] = []
    for (tool, arguments) in [("nft", ["-j", "list", "ruleset"]), ("iptables", ["-S"])] {
      guard
        let path = ["/usr/sbin/", "/sbin/", "/usr/bin/"].map({ $0 + tool }).first(where: {
          FileManager.default.isExecutableFile(atPath: $0)
        })
      else { continue }
      guard let text = await CommandOutput.of(path, arguments) else {
        unread.append(tool)
        continue
      }
      let parsed =
        tool == "nft"
        ? FirewallRules.nftables(json: text, targets: targets)
        : FirewallRules.iptables(text, targets: targets)
      guard let rules = parsed else {
        unread.append(tool)
        continue
      }
      read.append(tool)
      findings += rules.findings.filter { finding in !findings.contains(finding) }
    }
    return (findings, read, unread)
  }

  static func firewall(port: UInt16?) async -> DoctorCheck {
    let (findings, read, unread) = await rules(FirewallRules.ferryTargets(port: port))
    let portText = port.map { "TCP \($0)" } ?? "the receiver's port"
    let tools = read.joined(separator: " and ")
    /// The command that accepts it where `finding`'s rule drops it, ahead of that rule.
    func fix(_ finding: FirewallRules.Finding) -> String {
      "accept it ahead of that rule: '\(finding.acceptCommand(port: port))'"
    }
    if let blocking = findings.first(where: { $0.affects == "mdns" && $0.definite }) {
      return .problem(
        "firewall",
        "\(tools) drops mDNS (UDP 5353): \(blocking.rule); nearby machines cannot find this "
          + "one, nor it them", fix: fix(blocking))
    }
    if let blocking = findings.first(where: { $0.affects == "port" && $0.definite }) {
      return .problem(
        "firewall",
        "\(tools) drops \(portText): \(blocking.rule); senders cannot connect to "
          + "'ferry receive --port \(port ?? 0)'", fix: fix(blocking))
    }
    if let maybe = findings.first(where: { !$0.definite }) {
      let what = maybe.affects == "mdns" ? "mDNS (UDP 5353)" : portText
      return .warning(
        "firewall",
        "\(tools) may drop \(what): \(maybe.rule), and no rule read here accepts it (rules in "
          + "chains jumped to are not read)",
        fix: fix(maybe))
    }
    if let loss = findings.first(where: { $0.affects == "loss" }) {
      return .warning(
        "firewall", "a rule drops packets at random: \(loss.rule)",
        fix: "remove it unless it is there on purpose (a test)")
    }
    if read.isEmpty {
      return .warning(
        "firewall",
        unread.isEmpty
          ? "neither nft nor iptables is installed: no rules to read"
          : "cannot read the rules of \(unread.joined(separator: ", ")) (run as root to check)")
    }
    return .ok(
      "firewall",
      "\(read.joined(separator: " and ")) rules leave mDNS (UDP 5353)"
        + (port.map { " and TCP \($0)" } ?? "") + " open"
        + (port == nil ? " (receive picks a port: fix one with --port to check it)" : ""))
  }
}
