import Foundation

/// What a firewall's rules do to Ferry's traffic, read from `nft -j list ruleset` (its JSON)
/// and `iptables -S`. Input-side chains only (an nftables chain hooked at `input` or
/// `prerouting`; iptables' `INPUT` and `PREROUTING`): a rule that drops or rejects one of the
/// ``Target``s — UDP 5353 (mDNS), the receiver's TCP port, LocalSend's UDP and TCP 53317, the
/// web page's port — one that drops packets at random, and a drop policy with no rule
/// accepting them.
///
/// A reading, not an evaluation: rules that match on more than the port (an address, an
/// interface) are reported too, as "may block", with the rule quoted.
struct FirewallRules: Sendable, Equatable {
  /// Traffic a rule may block: a name for it, its protocol and port.
  struct Target: Sendable, Equatable {
    let name: String
    /// `udp` or `tcp`.
    let proto: String
    let port: UInt16

    /// mDNS.
    static let mdns = Target(name: "mdns", proto: "udp", port: 5353)
    /// The receiver's TCP port.
    static func receiver(_ port: UInt16) -> Target {
      Target(name: "port", proto: "tcp", port: port)
    }
  }

  /// mDNS and, when fixed, the receiver's port: what a Ferry receiver needs.
  static func ferryTargets(port: UInt16?) -> [Target] {
    [.mdns] + (port.map { [.receiver($0)] } ?? [])
  }

  /// One finding: what is blocked and the rule that does it.
  struct Finding: Sendable, Equatable {
    /// What it affects: a ``Target``'s name (`mdns`, `port`, …) or `loss`.
    let affects: String
    /// The rule, as the tool printed it (trimmed).
    let rule: String
    /// A rule that names the port (a problem), rather than a drop policy or a catch-all
    /// drop that rules elsewhere (chains jumped to, not read) may get it past (a warning).
    var definite = true
    /// The chain the rule is in, as its tool names it: `inet filter input` (nft's family,
    /// table and chain), or `INPUT` (iptables).
    var chain = ""
    /// Whether the rule was read from nft (else iptables).
    var nft = true

    /// The command that accepts the traffic this finding blocks (`target`), at the head of
    /// the chain that drops it (so before the drop: `add` would append it after).
    func acceptCommand(for target: Target) -> String {
      nft
        ? "nft insert rule \(chain) \(target.proto) dport \(target.port) accept"
        : "iptables -I \(chain) -p \(target.proto) --dport \(target.port) -j ACCEPT"
    }

    /// ``acceptCommand(for:)`` for mDNS or the receiver's TCP `port`.
    func acceptCommand(port: UInt16?) -> String {
      acceptCommand(for: affects == "mdns" ? .mdns : .receiver(port ?? 0))
    }
  }

  /// What the rules do to the targets, in the order they say it.
  var findings: [Finding] = []

  /// Reads `nft -j list ruleset` output (``nftables(json:targets:)``); `port` is the
  /// receiver's TCP port, if fixed. Nil when it is not nft's JSON.
  static func nftables(json text: String, port: UInt16?) -> FirewallRules? {
    nftables(json: text, targets: ferryTargets(port: port))
  }

  /// Reads `iptables -S` (or `ip6tables -S`) output; `port` is the receiver's TCP port, if
  /// fixed.
  static func iptables(_ text: String, port: UInt16?) -> FirewallRules {
    iptables(text, targets: ferryTargets(port: port))
  }

  /// Reads `iptables -S` (or `ip6tables -S`) output for `targets`.
  static func iptables(_ text: String, targets: [Target]) -> FirewallRules {
    var result = FirewallRules()
    var dropPolicy = false
    var accepts = Set<String>()
    for raw in text.split(separator: "\n") {
      let line = raw.trimmingCharacters(in: .whitespaces)
      if line == "-P INPUT DROP" {
        dropPolicy = true
        continue
      }
      guard line.hasPrefix("-A INPUT ") || line.hasPrefix("-A PREROUTING ") else { continue }
      let verdict = line.contains("-j DROP") || line.contains("-j REJECT")
      // `-A INPUT -j REJECT …` with nothing to match takes what was not accepted before.
      let matches = line.split(separator: " ").dropFirst(2).prefix { $0 != "-j" }
      let chain = String(line.split(separator: " ")[1])
      func found(_ affects: String, definite: Bool = true) {
        result.findings.append(
          Finding(affects: affects, rule: line, definite: definite, chain: chain, nft: false))
      }
      if verdict && matches.isEmpty {
        for target in targets where !accepts.contains(target.name) {
          found(target.name, definite: false)
          accepts.insert(target.name)
        }
        continue
      }
      let matched = targets.filter { iptablesMentions(line, port: $0.port, proto: $0.proto) }
      if verdict && line.contains("statistic") {
        found("loss")
      } else if verdict {
        for target in matched where !accepts.contains(target.name) { found(target.name) }
      }
      let narrow = ["-s", "-d", "-i", "--src-range", "--mac-source"].contains {
        line.split(separator: " ").contains(Substring($0))
      }
      if line.contains("-j ACCEPT") && !narrow { accepts.formUnion(matched.map(\.name)) }
    }
    if dropPolicy {
      for target in targets where !accepts.contains(target.name) {
        result.findings.append(
          Finding(
            affects: target.name,
            rule: target == .mdns
              ? "-P INPUT DROP" : "-P INPUT DROP (\(target.proto) \(target.port))",
            definite: false, chain: "INPUT", nft: false))
      }
    }
    return result
  }

  private static func iptablesMentions(_ line: String, port: UInt16, proto: String) -> Bool {
    guard line.contains("-p \(proto)") else { return false }
    let words = line.split(separator: " ")
    guard let index = words.firstIndex(where: { $0 == "--dport" || $0 == "--dports" }),
      index + 1 < words.count
    else { return true }
    return words[index + 1].split(separator: ",").contains { matches($0, port: port, range: ":") }
  }

  /// Whether `item` — one port, or a range `LOW<range>HIGH` (nft `50000-60000`, iptables
  /// `50000:60000`) — holds `port`.
  private static func matches(_ item: Substring, port: UInt16, range: Character) -> Bool {
    let bounds = item.split(separator: range).compactMap { UInt16($0) }
    if bounds.count == 2 { return bounds[0] <= port && port <= bounds[1] }
    return bounds.first == port
  }
}
