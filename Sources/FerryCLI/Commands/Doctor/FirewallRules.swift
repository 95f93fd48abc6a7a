import Foundation

/// What a firewall's rules do to Ferry's traffic, read from their text: `nft list ruleset`
/// and `iptables -S`. Input-side chains only (an nftables chain hooked at `input` or
/// `prerouting`; iptables' `INPUT` and `PREROUTING`): a rule that drops or rejects UDP 5353
/// (mDNS) or the receiver's TCP port, one that drops packets at random, and a drop policy
/// with no rule accepting them.
///
/// A reading, not an evaluation: rules that match on more than the port (an address, an
/// interface) are reported too, as "may block", with the rule quoted.
struct FirewallRules: Sendable, Equatable {
  /// One finding: what is blocked and the rule that does it.
  struct Finding: Sendable, Equatable {
    /// What it affects: `mdns`, `port` or `loss`.
    let affects: String
    /// The rule, as the tool printed it (trimmed).
    let rule: String
    /// A rule that names the port (a problem), rather than a drop policy or a catch-all
    /// drop that rules elsewhere (chains jumped to, not read) may get it past (a warning).
    var definite = true
  }

  private(set) var findings: [Finding] = []

  /// Reads `nft list ruleset` output; `port` is the receiver's TCP port, if fixed.
  static func nftables(_ text: String, port: UInt16?) -> FirewallRules {
    var result = FirewallRules()
    var inputChain = false
    var dropPolicy = false
    var accepts = (mdns: false, port: false)
    func closeChain() {
      if inputChain && dropPolicy {
        if !accepts.mdns {
          result.findings.append(Finding(affects: "mdns", rule: "policy drop", definite: false))
        }
        if let port, !accepts.port {
          result.findings.append(
            Finding(affects: "port", rule: "policy drop (tcp \(port))", definite: false))
        }
      }
      (inputChain, dropPolicy, accepts) = (false, false, (false, false))
    }
    for raw in text.split(separator: "\n") {
      let line = raw.trimmingCharacters(in: .whitespaces)
      if line.hasPrefix("chain ") {
        closeChain()
        continue
      }
      if line.hasPrefix("type ") && line.contains(" hook ") {
        inputChain = line.contains("hook input") || line.contains("hook prerouting")
        dropPolicy = line.contains("policy drop")
        continue
      }
      guard inputChain, !line.isEmpty, line != "}" else { continue }
      let words = line.split(separator: " ").map(String.init)
      let verdict = words.contains("drop") || words.contains("reject")
      let accept = words.last == "accept"
      let mdns = mentions(line, port: 5353, proto: "udp")
      let tcp = port.map { mentions(line, port: $0, proto: "tcp") } ?? false
      // A drop with nothing to match (after the accepts so far) takes what is left.
      let catchAll = ["drop", "reject", "counter"].contains(words.first ?? "")
      if verdict && catchAll {
        if !accepts.mdns {
          result.findings.append(Finding(affects: "mdns", rule: line, definite: false))
        }
        if port != nil, !accepts.port {
          result.findings.append(Finding(affects: "port", rule: line, definite: false))
        }
        (accepts.mdns, accepts.port) = (true, true)  // reported once
      } else if verdict && line.contains("numgen random") {
        result.findings.append(Finding(affects: "loss", rule: line))
      } else if verdict && mdns {
        result.findings.append(Finding(affects: "mdns", rule: line))
      } else if verdict && tcp {
        result.findings.append(Finding(affects: "port", rule: line))
      }
      if accept && mdns { accepts.mdns = true }
      if accept && tcp { accepts.port = true }
    }
    closeChain()
    return result
  }

  /// Reads `iptables -S` (or `ip6tables -S`) output.
  static func iptables(_ text: String, port: UInt16?) -> FirewallRules {
    var result = FirewallRules()
    var dropPolicy = false
    var accepts = (mdns: false, port: false)
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
      if verdict && matches.isEmpty {
        if !accepts.mdns {
          result.findings.append(Finding(affects: "mdns", rule: line, definite: false))
        }
        if port != nil, !accepts.port {
          result.findings.append(Finding(affects: "port", rule: line, definite: false))
        }
        (accepts.mdns, accepts.port) = (true, true)
        continue
      }
      let mdns = iptablesMentions(line, port: 5353, proto: "udp")
      let tcp = port.map { iptablesMentions(line, port: $0, proto: "tcp") } ?? false
      if verdict && line.contains("statistic") {
        result.findings.append(Finding(affects: "loss", rule: line))
      } else if verdict && mdns {
        result.findings.append(Finding(affects: "mdns", rule: line))
      } else if verdict && tcp {
        result.findings.append(Finding(affects: "port", rule: line))
      }
      if line.contains("-j ACCEPT") && mdns { accepts.mdns = true }
      if line.contains("-j ACCEPT") && tcp { accepts.port = true }
    }
    if dropPolicy {
      if !accepts.mdns {
        result.findings.append(Finding(affects: "mdns", rule: "-P INPUT DROP", definite: false))
      }
      if let port, !accepts.port {
        result.findings.append(
          Finding(affects: "port", rule: "-P INPUT DROP (tcp \(port))", definite: false))
      }
    }
    return result
  }

  /// Whether an nftables rule matches `proto` destination port `port` (alone, in a set or a
  /// range), or every port of `proto` (`meta l4proto udp drop`).
  private static func mentions(_ line: String, port: UInt16, proto: String) -> Bool {
    guard line.contains(proto) else { return false }
    guard let range = line.range(of: "\(proto) dport ") else {
      return !line.contains("dport") && !line.contains("sport")
        && (line.contains("l4proto \(proto)") || line.contains("protocol \(proto)"))
    }
    let rest = line[range.upperBound...]
    let value: Substring
    if rest.hasPrefix("{"), let end = rest.firstIndex(of: "}") {
      value = rest[rest.index(after: rest.startIndex)..<end]
    } else {
      value = rest.prefix { $0 != " " }
    }
    return value.split(whereSeparator: { $0 == "," || $0 == " " }).contains {
      matches($0, port: port, range: "-")
    }
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
