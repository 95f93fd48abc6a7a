/// One resolved address of a discovered peer.
public struct DiscoveredAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The IP version of an address.
  public enum Family: String, Hashable, Sendable, Comparable {
    /// IPv4.
    case ipv4
    /// IPv6.
    case ipv6

    /// IPv4 sorts first.
    public static func < (lhs: Family, rhs: Family) -> Bool {
      lhs == .ipv4 && rhs == .ipv6
    }
  }

  /// IPv4 or IPv6.
  public let family: Family
  /// The address in text form; link-local IPv6 addresses carry their zone, e.g. `fe80::1%eth0`.
  public let ip: String
  /// The name of the interface the service was seen on, e.g. `eth0`.
  public let interface: String

  /// Creates an address record.
  public init(family: Family, ip: String, interface: String) {
    self.family = family
    self.ip = ip
    self.interface = interface
  }

  /// `ip:port`, with brackets around IPv6 (`[fe80::1%eth0]:5000`).
  public func hostPortString(port: UInt16) -> String {
    family == .ipv6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
  }

  /// `ip on interface`.
  public var description: String { "\(ip) on \(interface)" }

  /// Orders by family (IPv4 first), then address, then interface.
  public static func < (lhs: DiscoveredAddress, rhs: DiscoveredAddress) -> Bool {
    (lhs.family, lhs.ip, lhs.interface) < (rhs.family, rhs.ip, rhs.interface)
  }
}
