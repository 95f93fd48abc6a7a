import Ferry

/// The addresses `[discovery] localsend_scan` names: IPv4 addresses and CIDR blocks no larger
/// than /22 (1 024 addresses), at most ``maximumAddresses`` in all, checked as bytes.
enum ScanRange {
  /// The most addresses a config may have scanned.
  static let maximumAddresses = 1024
  /// The largest block: /22.
  static let shortestPrefix = 22

  /// Every address `texts` names, in order, once each (a block's network and broadcast
  /// addresses left out).
  ///
  /// - Throws: ``ConfigError`` (at `line`) for a text that is no IPv4 address or block, a
  ///   block larger than /22, or more than ``maximumAddresses`` in all.
  static func addresses(_ texts: [String], line: Int) throws(ConfigError) -> [String] {
    var addresses: [String] = []
    var seen: Set<UInt32> = []
    for text in texts {
      let parts = text.split(separator: "/", omittingEmptySubsequences: false)
      guard (1...2).contains(parts.count), let base = ipv4(parts[0]),
        let prefix = parts.count == 2 ? prefixLength(parts[1]) : 32
      else {
        throw ConfigError(
          line: line,
          message: "'\(DisplayText.escaping(text))' in localsend_scan is not an IPv4 address "
            + "or block (such as 192.168.2.0/24)")
      }
      guard prefix >= shortestPrefix else {
        throw ConfigError(
          line: line,
          message: "'\(DisplayText.escaping(text))' in localsend_scan is larger than "
            + "/\(shortestPrefix) (1024 addresses)")
      }
      let mask: UInt32 = prefix == 0 ? 0 : ~UInt32(0) << (32 - UInt32(prefix))
      let network = base & mask
      let count = UInt32(1) << (32 - UInt32(prefix))
      let hosts = prefix >= 31 ? 0..<count : 1..<(count - 1)
      for offset in hosts where seen.insert(network + offset).inserted {
        addresses.append(dotted(network + offset))
      }
      guard addresses.count <= maximumAddresses else {
        throw ConfigError(
          line: line,
          message: "localsend_scan names more than \(maximumAddresses) addresses")
      }
    }
    return addresses
  }

  private static func ipv4(_ text: Substring) -> UInt32? {
    let octets = text.split(separator: ".", omittingEmptySubsequences: false)
    guard octets.count == 4 else { return nil }
    var value: UInt32 = 0
    for octet in octets {
      guard (1...3).contains(octet.utf8.count),
        octet.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
        let number = UInt32(octet), number <= 255
      else { return nil }
      value = value << 8 | number
    }
    return value
  }

  private static func prefixLength(_ text: Substring) -> Int? {
    guard (1...2).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
      let number = Int(text), number <= 32
    else { return nil }
    return number
  }

  private static func dotted(_ value: UInt32) -> String {
    "\(value >> 24).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)"
  }
}
