/// A `HOST:PORT` text, as a user types it and as ``KnownPeers`` remembers it: a host name or an
/// IP literal (IPv6 in brackets, `[fe80::1%eth0]:5000`) and a port from 1 to 65535. Checked as
/// bytes: the host holds only letters, digits and `.-_:%` (nothing a terminal or a resolver
/// would read otherwise), at most 253 bytes.
package struct HostPort: Hashable, Sendable, CustomStringConvertible {
  /// The host name or IP address, without brackets.
  package let host: String
  /// The TCP port.
  package let port: UInt16

  /// The longest host accepted: a DNS name's length.
  package static let maximumHostBytes = 253

  /// Parses `text`; nil when it is not `HOST:PORT` as described above.
  package init?(_ text: String) {
    let bytes = Array(text.utf8)
    guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")) else { return nil }
    let digits = bytes[(colon + 1)...]
    guard (1...5).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }),
      let number = Int(String(decoding: digits, as: UTF8.self)), (1...65535).contains(number)
    else { return nil }
    var host = bytes[..<colon]
    let bracketed = host.first == UInt8(ascii: "[") && host.last == UInt8(ascii: "]")
    if bracketed { host = host.dropFirst().dropLast() }
    guard !host.isEmpty, host.count <= Self.maximumHostBytes,
      host.allSatisfy(Self.isHostByte),
      // An IPv6 address's colons need brackets: `::1:80` would be ambiguous.
      bracketed || !host.contains(UInt8(ascii: ":"))
    else { return nil }
    self.init(host: String(decoding: host, as: UTF8.self), port: UInt16(number))
  }

  /// `host` and `port` as they are (the caller checked them).
  package init(host: String, port: UInt16) {
    self.host = host
    self.port = port
  }

  /// `host:port`, with brackets around an IPv6 address.
  package var description: String {
    host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]:\(port)" : "\(host):\(port)"
  }

  private static func isHostByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"),
      UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "%"):
      return true
    default:
      return false
    }
  }
}
