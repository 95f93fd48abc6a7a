import Foundation

/// This machine's addresses a sender on the network could use: up interfaces, not loopback,
/// IPv4 first, IPv6 without link-local ones (those need an interface a sender cannot guess).
enum LocalAddresses {
  /// The addresses, as text (`10.0.0.5`, `fd00::5`); empty when there are none or they cannot
  /// be listed.
  static func all() -> [String] {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0, let first = list else { return [] }
    defer { freeifaddrs(list) }
    var v4: [String] = []
    var v6: [String] = []
    for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
      let flags = Int32(entry.pointee.ifa_flags)
      guard let address = entry.pointee.ifa_addr, flags & Int32(IFF_UP) != 0,
        flags & Int32(IFF_LOOPBACK) == 0
      else { continue }
      var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
      switch Int32(address.pointee.sa_family) {
      case AF_INET:
        guard
          getnameinfo(
            address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count),
            nil, 0, NI_NUMERICHOST) == 0
        else { continue }
        v4.append(text(host))
      case AF_INET6:
        let isLinkLocal = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
          $0.pointee.sin6_addr.__in6_u.__u6_addr8.0 == 0xFE
            && $0.pointee.sin6_addr.__in6_u.__u6_addr8.1 & 0xC0 == 0x80
        }
        guard !isLinkLocal,
          getnameinfo(
            address, socklen_t(MemoryLayout<sockaddr_in6>.size), &host, socklen_t(host.count),
            nil, 0, NI_NUMERICHOST) == 0
        else { continue }
        v6.append(text(host))
      default:
        continue
      }
    }
    var seen = Set<String>()
    return (v4 + v6).filter { seen.insert($0).inserted }
  }

  /// A NUL-terminated C string as text.
  private static func text(_ characters: [CChar]) -> String {
    String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// `HOST:PORT` with this machine's first address (an IPv6 one in brackets), or `HOST:PORT`
  /// literally when it has none.
  static func example(port: UInt16) -> String {
    guard let first = all().first else { return "HOST:\(port)" }
    return first.contains(":") ? "[\(first)]:\(port)" : "\(first):\(port)"
  }
}
