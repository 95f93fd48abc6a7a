/// A browser as a person names it, from its User-Agent: "Chrome on Android", "Safari on
/// iPhone". What a page's visitor says of itself is a claim, shown as one (escaped by the
/// caller); the whole header, cut mid-token, told a person nothing.
enum BrowserName {
  /// "BROWSER on SYSTEM" for a User-Agent the usual browsers send; its first product token
  /// (at most 60 bytes, on a character boundary) otherwise; nil for none.
  static func of(_ userAgent: String?) -> String? {
    guard let agent = userAgent?.trimmingCharacters(in: .whitespaces), !agent.isEmpty else {
      return nil
    }
    let browser = Self.browsers.first { agent.contains($0.token) }?.name
    let system = Self.systems.first { agent.contains($0.token) }?.name
    switch (browser, system) {
    case (let browser?, let system?): return "\(browser) on \(system)"
    case (let browser?, nil): return browser
    case (nil, let system?): return "a browser on \(system)"
    case (nil, nil):
      var first = ""
      for character in agent.prefix(while: { $0 != " " }) {
        guard first.utf8.count + String(character).utf8.count <= 60 else { break }
        first.append(character)
      }
      return first
    }
  }

  /// In the order they are looked for: each browser's token is in its own User-Agent, and
  /// those it builds on (Chrome's in Edge's, Safari's in Chrome's) come after it.
  private static let browsers: [(token: String, name: String)] = [
    ("Edg/", "Edge"), ("EdgA/", "Edge"), ("OPR/", "Opera"), ("SamsungBrowser/", "Samsung Internet"),
    ("Firefox/", "Firefox"), ("FxiOS/", "Firefox"), ("CriOS/", "Chrome"), ("Chromium/", "Chromium"),
    ("Chrome/", "Chrome"), ("Safari/", "Safari"),
  ]

  private static let systems: [(token: String, name: String)] = [
    ("Android", "Android"), ("iPhone", "iPhone"), ("iPad", "iPad"), ("CrOS", "ChromeOS"),
    ("Windows", "Windows"), ("Macintosh", "macOS"), ("Linux", "Linux"),
  ]
}
