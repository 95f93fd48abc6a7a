import NIOCore

#if canImport(Glibc)
  import Glibc
#endif

/// A connection's peer address as it is shown and compared: without its port, an IPv4-mapped
/// IPv6 address as IPv4, an IPv6 link-local one with its zone (`fe80::1%wlan0`), without
/// which it cannot be reached.
enum PeerAddress {
  /// The address of `socket` ("unknown" without one).
  static func of(_ socket: SocketAddress?) -> String {
    guard let ip = socket?.ipAddress else { return "unknown" }
    if ip.hasPrefix("::ffff:") { return String(ip.dropFirst(7)) }
    if case .v6(let v6)? = socket, v6.address.sin6_scope_id != 0,
      ip.lowercased().hasPrefix("fe80:"), !ip.contains("%")
    {
      var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
      if if_indextoname(v6.address.sin6_scope_id, &name) != nil {
        let bytes = name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return ip + "%" + String(decoding: bytes, as: UTF8.self)
      }
      return ip + "%\(v6.address.sin6_scope_id)"
    }
    return ip
  }
}
