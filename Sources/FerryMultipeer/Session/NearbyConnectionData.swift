import Ferry
import Foundation

/// The data ``MCSession/nearbyConnectionData(forPeer:withCompletionHandler:)`` hands out and
/// ``MCSession/connectPeer(_:withNearbyConnectionData:)`` reads: how to reach a session
/// without discovery. JSON: `{"v":1,"fp":"<64 hex>","name":"…","port":N,"addresses":[…]}`.
///
/// It travels out of band (the application carries it), so it is checked as untrusted: at
/// most ``maximumBytes``, at most ``maximumAddresses`` addresses, a valid fingerprint, name and
/// port.
struct NearbyConnectionData: Codable, Equatable {
  static let maximumBytes = 8 << 10
  static let maximumAddresses = 16

  let v: Int
  let fp: String
  let name: String
  let port: UInt16
  let addresses: [String]

  /// The data for a session listening on `port` at `addresses`.
  init(peer: PeerID, port: UInt16, addresses: [String]) {
    v = 1
    fp = peer.fingerprint.hexString
    name = peer.displayName
    self.port = port
    self.addresses = Array(addresses.prefix(Self.maximumAddresses))
  }

  /// Decodes and checks `data`; nil when it is not valid connection data.
  static func decode(_ data: Data) -> (peer: PeerID, port: UInt16, addresses: [String])? {
    guard data.count <= maximumBytes,
      let decoded = try? JSONDecoder().decode(NearbyConnectionData.self, from: data),
      decoded.v == 1, decoded.port != 0, !decoded.addresses.isEmpty,
      decoded.addresses.count <= maximumAddresses,
      decoded.addresses.allSatisfy({ isAddress($0) }),
      let fingerprint = try? Fingerprint(parsing: decoded.fp),
      let peer = try? PeerID(displayName: decoded.name, fingerprint: fingerprint)
    else { return nil }
    return (peer, decoded.port, decoded.addresses)
  }

  /// The encoded data.
  var encoded: Data {
    // Encoding strings and integers cannot fail.
    try! JSONEncoder().encode(self)
  }

  /// Whether `text` is a numeric IPv4 or IPv6 address (no host names: nothing to resolve).
  static func isAddress(_ text: String) -> Bool {
    guard text.utf8.count <= 64 else { return false }
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
  }

  /// This host's addresses: IPv4 first, then IPv6 without link-local ones (which need a scope),
  /// loopback last.
  static func localAddresses() -> [String] {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0, let first = list else { return ["127.0.0.1"] }
    defer { freeifaddrs(list) }
    var v4: [String] = []
    var v6: [String] = []
    var loopback: [String] = []
    for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
      guard let address = entry.pointee.ifa_addr,
        entry.pointee.ifa_flags & UInt32(IFF_UP) != 0
      else { continue }
      let family = Int32(address.pointee.sa_family)
      guard family == AF_INET || family == AF_INET6 else { continue }
      var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
      let length = socklen_t(
        family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
      guard
        getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0
      else { continue }
      let text = String(
        decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      if entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) != 0 {
        loopback.append(text)
      } else if family == AF_INET {
        v4.append(text)
      } else if !text.lowercased().hasPrefix("fe80") {
        v6.append(text)
      }
    }
    return Array((v4 + v6 + loopback).prefix(maximumAddresses))
  }
}
