import FerryLocalSend
import Foundation

/// The daemon's web page: its HTML, script and style — files of their own in the repository
/// (`UI/Assets/`: ui.html, ui.js, ui-format.js, ui-upload.js, ui.css, icon.svg,
/// signed-out.html), linted by scripts/test and
/// embedded in the binary at build time — and the headers every answer of its server carries.
/// No external resource, nothing inline: the Content-Security-Policy allows the page's own
/// script, style and requests only.
enum UIPage {
  /// The headers every answer carries: `receive --web`'s page's (nothing but this server's
  /// own script, style, images and requests; no framing, no referrer, no caching, no
  /// sniffing), and this page's window and resources kept to its own origin.
  static let securityHeaders: [(String, String)] =
    WebPage.securityHeaders + [
      ("cross-origin-opener-policy", "same-origin"),
      ("cross-origin-resource-policy", "same-origin"),
    ]

  /// The page.
  static let html = PackageResources.ui_html
  /// Its script.
  static let script = PackageResources.ui_js
  /// Its script's words and numbers (pure functions, unit-tested under node).
  static let format = PackageResources.ui_format_js
  /// Its uploads of the browser's files.
  static let upload = PackageResources.ui_upload_js
  /// Its style.
  static let style = PackageResources.ui_css
  /// What the page's pairing QR code says: the command that trusts this machine on another
  /// one, which a phone's camera shows as text to pass on (the name quoted for a shell).
  static func pairing(name: String, fingerprint: String) -> String {
    "ferry trust \(fingerprint) --name '\(name.replacingOccurrences(of: "'", with: "'\\''"))'"
  }

  /// Its icon.
  static let icon = PackageResources.icon_svg
  /// What a browser without the cookie (or with a used link) is shown.
  static let signedOut = PackageResources.signed_out_html
}
