import NIOCore

/// The unit per-address caps count by: an IPv4 address (also when it arrives IPv4-mapped), or
/// an IPv6 address's /64 network — one host is routinely given a whole /64 and can pick a new
/// address in it for every connection.
enum AddressGroup {
  /// The group of `address`: `192.0.2.7`, `2001:db8:1:2::/64`, or `unknown`.
  static func key(of address: SocketAddress?) -> String {
    switch address {
    case .v4?:
      return address?.ipAddress ?? "unknown"
    case .v6(let v6)?:
      let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
      if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
        return bytes[12...].map { String($0) }.joined(separator: ".")
      }
      let groups = stride(from: 0, to: 8, by: 2).map {
        String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
      }
      return groups.joined(separator: ":") + "::/64"
    default:
      return "unknown"
    }
  }
}
