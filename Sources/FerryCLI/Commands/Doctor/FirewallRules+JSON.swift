import Foundation

extension FirewallRules {
  /// Reads `nft -j list ruleset` (libnftables' JSON schema, version 1) for `targets`: the
  /// same judgement as ``nftables(_:targets:)`` makes of the text, from the rules' structure
  /// rather than their words. Input-side chains only (hooked at `input` or `prerouting`), in
  /// order; a chain's `drop` policy counts for what no rule before it accepted. Nil when the
  /// text is not nft's JSON.
  static func nftables(json text: String, targets: [Target]) -> FirewallRules? {
    guard let top = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
      let objects = top["nftables"] as? [[String: Any]]
    else { return nil }
    var result = FirewallRules()
    // Each chain hooked where traffic comes in, by family, table and name: its policy.
    var inputChains: [String: (policy: String, chain: String)] = [:]
    var order: [String] = []
    var rules: [String: [[[String: Any]]]] = [:]
    for object in objects {
      if let chain = object["chain"] as? [String: Any], let hook = chain["hook"] as? String,
        hook == "input" || hook == "prerouting"
      {
        let key = Self.key(chain, name: chain["name"])
        inputChains[key] = (
          chain["policy"] as? String ?? "accept",
          "\(chain["family"] as? String ?? "") \(chain["table"] as? String ?? "") "
            + "\(chain["name"] as? String ?? "")"
        )
        order.append(key)
      } else if let rule = object["rule"] as? [String: Any],
        let expressions = rule["expr"] as? [[String: Any]]
      {
        rules[Self.key(rule, name: rule["chain"]), default: []].append(expressions)
      }
    }
    for key in order {
      guard let (policy, chain) = inputChains[key] else { continue }
      var accepts = Set<String>()
      func found(_ affects: String, _ rule: String, definite: Bool = true) {
        result.findings.append(
          Finding(affects: affects, rule: rule, definite: definite, chain: chain))
      }
      for expressions in rules[key] ?? [] {
        let rule = Rule(expressions)
        let matched = targets.filter { rule.matches($0) }
        if rule.drops && rule.isCatchAll {
          for target in targets where !accepts.contains(target.name) {
            found(target.name, rule.text, definite: false)
            accepts.insert(target.name)  // reported once
          }
        } else if rule.drops && rule.isRandom {
          found("loss", rule.text)
        } else if rule.drops {
          // (A drop after a rule that accepted it never sees it.)
          for target in matched where !accepts.contains(target.name) {
            found(target.name, rule.text)
          }
        }
        // Only an accept for every source counts: one for some addresses or an interface
        // leaves the rest to the drop below it.
        if rule.accepts && !rule.isNarrow { accepts.formUnion(matched.map(\.name)) }
      }
      if policy == "drop" {
        for target in targets where !accepts.contains(target.name) {
          found(
            target.name,
            target == .mdns ? "policy drop" : "policy drop (\(target.proto) \(target.port))",
            definite: false)
        }
      }
    }
    return result
  }

  /// `family table name` of a chain or rule object.
  private static func key(_ object: [String: Any], name: Any?) -> String {
    "\(object["family"] as? String ?? "") \(object["table"] as? String ?? "") \(name as? String ?? "")"
  }

  /// One rule's expressions, as the judgement needs them.
  private struct Rule {
    /// `(protocol, ports)` of each `PROTO dport …` match: nil ports for a match of the
    /// protocol alone (`meta l4proto udp`).
    var ports: [(proto: String, ports: [ClosedRange<Int>]?)] = []
    var drops = false
    var accepts = false
    var isRandom = false
    var isNarrow = false
    var matchesSomething = false
    var otherPorts = false
    var words: [String] = []

    init(_ expressions: [[String: Any]]) {
      for expression in expressions {
        if let match = expression["match"] as? [String: Any] { take(match) }
        if expression.keys.contains("drop") {
          drops = true
          words.append("drop")
        }
        if let reject = expression["reject"] {
          drops = true
          let type = (reject as? [String: Any])?["type"] as? String
          words.append("reject" + (type.map { " with \($0)" } ?? ""))
        }
        if expression.keys.contains("accept") {
          accepts = true
          words.append("accept")
        }
        if expression.keys.contains("counter") { words.append("counter") }
      }
    }

    /// The rule as nft would print it, near enough for a person to find it.
    var text: String { words.joined(separator: " ") }

    /// Whether it drops whatever reaches it: no match at all.
    var isCatchAll: Bool { !matchesSomething }

    private mutating func take(_ match: [String: Any]) {
      matchesSomething = true
      let left = match["left"] as? [String: Any] ?? [:]
      let right = match["right"]
      if let payload = left["payload"] as? [String: Any] {
        let proto = payload["protocol"] as? String ?? ""
        let field = payload["field"] as? String ?? ""
        switch field {
        case "dport":
          ports.append((proto, Self.ports(right)))
          words.append("\(proto) dport \(Self.describe(right))")
        case "sport":
          otherPorts = true
          words.append("\(proto) sport \(Self.describe(right))")
        default:
          if ["saddr", "daddr"].contains(field) || payload["protocol"] as? String == "ether" {
            isNarrow = true
          }
          words.append("\(proto) \(field) \(Self.describe(right))")
        }
      } else if let meta = left["meta"] as? [String: Any], let key = meta["key"] as? String {
        if key == "l4proto" || key == "protocol", let proto = right as? String {
          ports.append((proto, nil))
        }
        if ["iif", "iifname", "mark"].contains(key) { isNarrow = true }
        words.append("meta \(key) \(Self.describe(right))")
      } else if left["numgen"] != nil {
        isRandom = true
        words.append("numgen random \(match["op"] as? String ?? "") \(Self.describe(right))")
      } else {
        words.append("…")
      }
    }

    /// Whether the rule matches `target`'s protocol and port.
    func matches(_ target: Target) -> Bool {
      ports.contains { match in
        guard match.proto == target.proto else { return false }
        guard let ranges = match.ports else { return !otherPorts }
        return ranges.contains { $0.contains(Int(target.port)) }
      }
    }

    /// The ports a match's right side names: one, a set, a range, a set of both.
    private static func ports(_ value: Any?) -> [ClosedRange<Int>] {
      if let port = value as? Int { return [port...port] }
      if let object = value as? [String: Any] {
        if let range = object["range"] as? [Int], range.count == 2, range[0] <= range[1] {
          return [range[0]...range[1]]
        }
        if let set = object["set"] as? [Any] { return set.flatMap { ports($0) } }
      }
      return []
    }

    /// A match's right side in nft's words.
    private static func describe(_ value: Any?) -> String {
      if let object = value as? [String: Any] {
        if let range = object["range"] as? [Any], range.count == 2 {
          return "\(describe(range[0]))-\(describe(range[1]))"
        }
        if let set = object["set"] as? [Any] {
          return "{ " + set.map { describe($0) }.joined(separator: ", ") + " }"
        }
        if let prefix = object["prefix"] as? [String: Any] {
          return "\(describe(prefix["addr"]))/\(describe(prefix["len"]))"
        }
      }
      return value.map { "\($0)" } ?? ""
    }
  }
}
