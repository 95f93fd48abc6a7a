import Foundation
import NIOCore
import NIOPosix

/// What makes a ``LocalSendServer`` a web page's receiver (`ferry receive --web`): the link's
/// unguessable token and when it expires. The page is served at ``pagePath``; its requests to
/// LocalSend's upload endpoints carry the token in ``tokenHeader``. Without the token — or
/// after ``expires`` — nothing is served but a plain "expired or wrong link" page.
public struct LocalSendWebAccess: Sendable {
  /// 128 random bits, lower-case hex.
  public let token: String
  /// When the link stops working.
  public let expires: ContinuousClock.Instant

  /// The header a page's API requests carry the token in.
  public static let tokenHeader = "x-ferry-token"
  /// Wrong tokens one address may try before it is refused (429) until the server stops.
  public static let wrongTokensPerAddress = 20

  /// - Parameters:
  ///   - token: The link's token (``newToken()``).
  ///   - expires: When the link stops working.
  public init(token: String, expires: ContinuousClock.Instant) {
    self.token = token
    self.expires = expires
  }

  /// A fresh token: 128 bits from the system's generator, as 32 lower-case hex digits.
  public static func newToken() -> String {
    var generator = SystemRandomNumberGenerator()
    let words = [generator.next() as UInt64, generator.next() as UInt64]
    return words.map { word in
      let hex = String(word, radix: 16)
      return String(repeating: "0", count: 16 - hex.count) + hex
    }.joined()
  }

  /// The page's path: `/r/TOKEN`.
  public var pagePath: String { "/r/\(token)" }

  /// Whether the link still works.
  public var isValid: Bool { ContinuousClock.now < expires }

  /// Whether `given` is the token, compared in time independent of where they differ.
  func matches(_ given: String) -> Bool {
    Secrets.same(token, given)
  }

  /// The addresses a browser nearby can reach: each interface's IPv4 address and unique local
  /// IPv6 address (fc00::/7); global IPv6 ones only when there is neither (link-local ones
  /// need a zone no browser takes); loopback only when there is nothing else. IPv4 ones
  /// first, IPv6 ones in brackets, ready for a URL. Any thread.
  public static func addresses() -> [String] {
    let devices = (try? System.enumerateDevices()) ?? []
    var local: [String] = []
    var global: [String] = []
    for device in devices {
      guard let ip = device.address?.ipAddress else { continue }
      switch device.address {
      case .v4:
        if !ip.hasPrefix("127.") { local.append(ip) }
      case .v6:
        let lower = ip.lowercased()
        guard lower != "::1", !lower.hasPrefix("fe80") else { continue }
        if lower.hasPrefix("fc") || lower.hasPrefix("fd") {
          local.append("[\(ip)]")
        } else {
          global.append("[\(ip)]")
        }
      default:
        continue
      }
    }
    var seen = Set<String>()
    // IPv4 first: the address a phone on the same Wi-Fi most likely reaches (many networks
    // have no IPv6), then unique local IPv6.
    let found = (local.isEmpty ? global : local).filter { seen.insert($0).inserted }
      .sorted { !$0.hasPrefix("[") && $1.hasPrefix("[") }
    return found.isEmpty ? ["127.0.0.1"] : found
  }
}
