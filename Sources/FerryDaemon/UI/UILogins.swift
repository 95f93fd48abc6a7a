import Ferry
import Foundation
import Synchronization

/// Who may use the daemon's web page: one-time login secrets (`ferry ui`'s links) and the
/// cookies they turn into. A secret works once, within ``lifetime``; at most ``secretLimit``
/// wait at once (the oldest gives way) and at most ``cookieLimit`` cookies are kept (the
/// oldest is forgotten: its browser is asked to log in again). Both are 128-bit random hex,
/// compared in constant time. Nothing is written to disk: a daemon that restarts forgets
/// every cookie. Any thread.
package final class UILogins: Sendable {
  /// How long a login link works.
  package static let lifetime: Duration = .seconds(60)
  /// The most login secrets waiting at once.
  package static let secretLimit = 16
  /// The most cookies kept.
  package static let cookieLimit = 64
  /// The cookie's name for the page on `port` (cookies are shared by every port of a host:
  /// another daemon's page on this machine sets one of another name).
  package static func cookieName(port: Int) -> String { "ferry-ui-\(port)" }

  private struct State {
    var secrets: [(value: String, expires: ContinuousClock.Instant)] = []
    var cookies: [String] = []
  }

  private let state = Mutex(State())
  private let clock: @Sendable () -> ContinuousClock.Instant

  /// Logins on `clock` (the continuous clock's now by default: tests pass their own).
  package init(clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
    self.clock = clock
  }

  /// A new login secret, working once within ``lifetime``.
  package func makeSecret() -> String {
    let secret = Self.token()
    let now = clock()
    state.withLock { state in
      state.secrets.removeAll { $0.expires <= now }
      if state.secrets.count >= Self.secretLimit { state.secrets.removeFirst() }
      state.secrets.append((secret, now + Self.lifetime))
    }
    return secret
  }

  /// Turns `secret` into a cookie's value, once: nil when it is not a secret waiting (used
  /// already, out of time, never made).
  package func redeem(_ secret: Substring) -> String? {
    let now = clock()
    return state.withLock { state -> String? in
      state.secrets.removeAll { $0.expires <= now }
      guard let index = state.secrets.firstIndex(where: { Self.same($0.value, secret) }) else {
        return nil
      }
      state.secrets.remove(at: index)
      let cookie = Self.token()
      if state.cookies.count >= Self.cookieLimit { state.cookies.removeFirst() }
      state.cookies.append(cookie)
      return cookie
    }
  }

  /// Whether the request's `Cookie` headers carry a cookie this daemon gave, named for `port`.
  package func admits(cookieHeaders: [String], port: Int) -> Bool {
    let given = cookieHeaders.flatMap { Self.values(named: Self.cookieName(port: port), in: $0) }
    guard !given.isEmpty else { return false }
    return state.withLock { state in
      given.contains { value in state.cookies.contains { Self.same($0, value) } }
    }
  }

  /// The values of the cookies named `name` in one `Cookie` header (`a=1; b=2`).
  static func values(named name: String, in header: String) -> [Substring] {
    header.split(separator: ";").compactMap { pair in
      let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name else {
        return nil
      }
      return parts[1].drop { $0 == " " }
    }
  }

  /// 128 unguessable bits, as hex (two draws from the system's generator).
  static func token() -> String {
    var generator = SystemRandomNumberGenerator()
    let words = [generator.next() as UInt64, generator.next() as UInt64]
    return Hex.lowercase(
      words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> ($0 * 8)) } })
  }

  /// Equal bytes, in a time that depends on the lengths only.
  static func same(_ known: String, _ given: Substring) -> Bool {
    let (a, b) = (Array(known.utf8), Array(given.utf8))
    guard a.count == b.count else { return false }
    return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
  }
}
