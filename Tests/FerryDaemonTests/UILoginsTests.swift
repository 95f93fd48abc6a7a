import Synchronization
import Testing

@testable import FerryDaemon

/// The web page's logins: a secret works once, within its minute; cookies are the daemon's
/// own; the oldest give way past the caps.
@Suite("The web page's logins")
struct UILoginsTests {
  /// A clock the test moves.
  final class Clock: Sendable {
    let now = Mutex(ContinuousClock.now)
    func advance(_ by: Duration) { now.withLock { $0 += by } }
  }

  @Test("a secret becomes a session once; its cookie opens the page, with its key the API")
  func once() throws {
    let logins = UILogins()
    let secret = logins.makeSecret()
    #expect(secret.utf8.count == 32)
    let session = try #require(logins.redeem(Substring(secret)))
    #expect(session.cookie != session.key && session.key.utf8.count == 32)
    #expect(logins.redeem(Substring(secret)) == nil)
    func access(_ headers: [String], _ key: String?, port: Int = 8385) -> UILogins.Access {
      logins.access(cookieHeaders: headers, key: key.map { Substring($0) }, port: port)
    }
    let cookie = "ferry-ui-8385=\(session.cookie)"
    #expect(access([cookie], session.key) == .full)
    #expect(access(["a=1; \(cookie); b=2"], session.key) == .full)
    #expect(access([cookie], nil) == .page)
    #expect(access([cookie], session.cookie) == .page)
    #expect(access([cookie], session.key + "0") == .page)
    #expect(access([], session.key) == .none)
    #expect(access(["ferry-ui-8385=\(secret)"], session.key) == .none)
    #expect(access(["ferry-ui-8385=\(session.key)"], session.key) == .none)
    #expect(access(["ferry-ui-8385x=\(session.cookie)"], session.key) == .none)
    #expect(access(["ferry-ui-8385="], session.key) == .none)
    // Another port's page names its cookie for its port.
    #expect(access([cookie], session.key, port: 8386) == .none)
    // Another session's key with this cookie: the page only.
    let other = try #require(logins.redeem(Substring(logins.makeSecret())))
    #expect(access([cookie], other.key) == .page)
  }

  @Test("a secret is out of time after a minute; wrong and empty ones are refused")
  func expiry() {
    let clock = Clock()
    let logins = UILogins(clock: { clock.now.withLock { $0 } })
    let late = logins.makeSecret()
    clock.advance(.seconds(59))
    let fresh = logins.makeSecret()
    clock.advance(.seconds(1))
    #expect(logins.redeem(Substring(late)) == nil)
    #expect(logins.redeem(Substring(fresh)) != nil)
    #expect(logins.redeem("") == nil)
    #expect(logins.redeem(Substring(String(repeating: "0", count: 32))) == nil)
    #expect(logins.redeem(Substring(String(repeating: "a", count: 100_000))) == nil)
  }

  @Test("past the caps the oldest secret and the oldest cookie give way")
  func caps() {
    let logins = UILogins()
    let first = logins.makeSecret()
    for _ in 0..<UILogins.secretLimit { _ = logins.makeSecret() }
    #expect(logins.redeem(Substring(first)) == nil)
    let sessions = (0...UILogins.cookieLimit).compactMap { _ in
      logins.redeem(Substring(logins.makeSecret()))
    }
    #expect(sessions.count == UILogins.cookieLimit + 1)
    let (oldestSession, last) = (sessions[0], sessions[UILogins.cookieLimit])
    let oldest = logins.access(
      cookieHeaders: ["ferry-ui-8385=\(oldestSession.cookie)"], key: Substring(oldestSession.key),
      port: 8385)
    let newest = logins.access(
      cookieHeaders: ["ferry-ui-8385=\(last.cookie)"], key: Substring(last.key), port: 8385)
    #expect(oldest == .none)
    #expect(newest == .full)
  }
}
