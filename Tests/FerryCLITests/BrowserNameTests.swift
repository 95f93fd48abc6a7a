import Testing

@testable import FerryCLI

/// A browser named as a person names it, from the User-Agent it sends.
@Suite("Browser names from User-Agents")
struct BrowserNameTests {
  @Test(
    "the usual browsers and systems",
    arguments: [
      (
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
          + "Chrome/124.0.0.0 Mobile Safari/537.36", "Chrome on Android"
      ),
      (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
          + "like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", "Safari on iPhone"
      ),
      (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          + "Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.51", "Edge on Windows"
      ),
      (
        "Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0",
        "Firefox on Linux"
      ),
      (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
          + "HeadlessChrome/120.0.0.0 Safari/537.36", "Chrome on Linux"
      ),
      ("curl/8.5.0", "curl/8.5.0"),
    ])
  func names(agent: String, expected: String) {
    #expect(BrowserName.of(agent) == expected)
  }

  @Test("none, or nothing but spaces, is nil; an odd first token is cut on a character")
  func odd() {
    #expect(BrowserName.of(nil) == nil)
    #expect(BrowserName.of("   ") == nil)
    let long = String(repeating: "é", count: 50)
    #expect(BrowserName.of(long)?.utf8.count ?? 99 <= 60)
  }
}
