import Foundation

/// The page `ferry receive --web` serves: a file picker, a folder picker and a drop zone, each
/// file's progress and the total, a clear end state, and errors in words. No external
/// resources (it works with no internet); its script and style are files of their own under
/// the link, so that the Content-Security-Policy allows nothing inline — and files of their
/// own in the repository (`Web/Assets/`: receive.html, receive.js, page.css, expired.html),
/// linted by scripts/test and embedded in the binary at build time. It uploads through
/// LocalSend's endpoints (`prepare-upload`, `upload`, `cancel`), the link's token in
/// ``LocalSendWebAccess/tokenHeader``.
package enum WebPage {
  /// The headers every web response carries: nothing but this server's own script, style and
  /// requests; no framing, no referrer (the link's token is in its path), no caching.
  package static let securityHeaders: [(String, String)] = [
    (
      "content-security-policy",
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        + "img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
    ("x-frame-options", "DENY"),
  ]

  /// What a request without the token (or after the link expired) gets.
  static let expired = String(decoding: PackageResources.expired_html, as: UTF8.self)

  /// The page itself, its script and style under `base` (the link's path).
  static func html(base: String) -> String {
    document(title: "Send files with Ferry", base: base, main: main)
  }

  /// A page of the link at `base`: `title`, the style and script under `base`, and `main`'s
  /// markup between them — for this page and ``WebSharePage``.
  static func document(title: String, base: String, main: String) -> String {
    """
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>\(title)</title>
    <link rel="stylesheet" href="\(base)/app.css"></head>
    <body><main>
    \(main)
    </main><script src="\(base)/app.js"></script></body></html>
    """
  }

  private static let main = String(decoding: PackageResources.receive_html, as: UTF8.self)

  /// The page's style: one column that fits a 360-px phone and centres on a desktop.
  static let css = String(decoding: PackageResources.page_css, as: UTF8.self)

  /// The page's script: picks, lists, asks (`prepare-upload`), uploads three at a time with
  /// progress, and says how it ended. Text from files and answers goes in as text, never as
  /// markup.
  static let script = String(decoding: PackageResources.receive_js, as: UTF8.self)
}
