import FerryLocalSend
import Foundation
import Synchronization

/// Who may use the daemon's web page: one-time login secrets (`ferry ui`'s links) and the
/// sessions they turn into — a cookie (HttpOnly: the browser sends it, to every port of the
/// host) and a key the page keeps in its own storage (per origin: this port only) and sends
/// with every API request and event stream. Neither is enough alone: a program on another
/// loopback port that the browser visits gets the cookie, never the key. A secret works once,
/// within ``lifetime``; at most ``secretLimit`` wait at once (the oldest gives way) and at most
/// ``cookieLimit`` sessions are kept (the oldest is forgotten: its browser is asked to log in
/// again). All are 128-bit random hex, compared in constant time. Nothing is written to disk:
/// a daemon that restarts forgets every session. Any thread.
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

  /// A browser signed in: its cookie, and the key its page keeps.
  package struct Session: Sendable, Equatable {
    /// The cookie's value.
    package let cookie: String
    /// The page's key.
    package let key: String
  }

  /// What a request's cookie and key let it do.
  package enum Access: Sendable, Equatable {
    /// Nothing but the login.
    case none
    /// The page and its files (a session's cookie without its key).
    case page
    /// The API and the event stream too (a session's cookie with its key).
    case full
  }

  private struct State {
    var secrets: [(value: String, expires: ContinuousClock.Instant)] = []
    var sessions: [Session] = []
  }

  private let state = Mutex(State())
  private let clock: @Sendable () -> ContinuousClock.Instant

  /// Logins on `clock` (the continuous clock's now by default: tests pass their own).
  package init(clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
    self.clock = clock
  }

  /// A new login secret, working once within ``lifetime``.
  package func makeSecret() -> String {
    let secret = Secrets.token()
    let now = clock()
    state.withLock { state in
      state.secrets.removeAll { $0.expires <= now }
      if state.secrets.count >= Self.secretLimit { state.secrets.removeFirst() }
      state.secrets.append((secret, now + Self.lifetime))
    }
    return secret
  }

  /// Turns `secret` into a session, once: nil when it is not a secret waiting (used already,
  /// out of time, never made).
  package func redeem(_ secret: Substring) -> Session? {
    let now = clock()
    return state.withLock { state -> Session? in
      state.secrets.removeAll { $0.expires <= now }
      guard let index = state.secrets.firstIndex(where: { Secrets.same($0.value, secret) }) else {
        return nil
      }
      state.secrets.remove(at: index)
      let session = Session(cookie: Secrets.token(), key: Secrets.token())
      if state.sessions.count >= Self.cookieLimit { state.sessions.removeFirst() }
      state.sessions.append(session)
      return session
    }
  }

  /// What a request may do with the cookies of its `Cookie` headers named for `port`, and the
  /// page's `key` (nil: none given).
  package func access(cookieHeaders: [String], key: Substring?, port: Int) -> Access {
    let given = cookieHeaders.flatMap { Self.values(named: Self.cookieName(port: port), in: $0) }
    guard !given.isEmpty else { return .none }
    return state.withLock { state in
      let matching = state.sessions.filter { session in
        given.contains { Secrets.same(session.cookie, $0) }
      }
      guard !matching.isEmpty else { return .none }
      guard let key else { return .page }
      return matching.contains { Secrets.same($0.key, key) } ? .full : .page
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
}
