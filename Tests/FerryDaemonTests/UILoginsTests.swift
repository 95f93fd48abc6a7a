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

  @Test("a secret becomes a cookie once; the cookie is admitted, others are not")
  func once() {
    let logins = UILogins()
    let secret = logins.makeSecret()
    #expect(secret.utf8.count == 32)
    let cookie = logins.redeem(Substring(secret))
    #expect(cookie != nil)
    #expect(logins.redeem(Substring(secret)) == nil)
    #expect(logins.admits(cookieHeaders: ["ferry-ui-8385=\(cookie ?? "")"], port: 8385))
    #expect(logins.admits(cookieHeaders: ["a=1; ferry-ui-8385=\(cookie ?? ""); b=2"], port: 8385))
    #expect(!logins.admits(cookieHeaders: ["ferry-ui-8385=\(secret)"], port: 8385))
    #expect(!logins.admits(cookieHeaders: ["ferry-ui-8385x=\(cookie ?? "")"], port: 8385))
    #expect(!logins.admits(cookieHeaders: ["ferry-ui-8385=\(cookie ?? "")0"], port: 8385))
    #expect(!logins.admits(cookieHeaders: ["ferry-ui-8385="], port: 8385))
    #expect(!logins.admits(cookieHeaders: [], port: 8385))
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
    let cookies = (0...UILogins.cookieLimit).compactMap { _ in
      logins.redeem(Substring(logins.makeSecret()))
    }
    #expect(cookies.count == UILogins.cookieLimit + 1)
    #expect(!logins.admits(cookieHeaders: ["ferry-ui-8385=\(cookies[0])"], port: 8385))
    #expect(
      logins.admits(cookieHeaders: ["ferry-ui-8385=\(cookies[UILogins.cookieLimit])"], port: 8385))
  }
}
