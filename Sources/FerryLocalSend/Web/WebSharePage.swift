import Foundation

/// The page `ferry send --web` serves: it asks the sender for the files (`prepare-download`:
/// the person at the terminal says yes or no), then lists them with a download link each and
/// their sizes. Style shared with ``WebPage``; no inline code.
enum WebSharePage {
  /// The page, its script and style under `base` (the link's path).
  static func html(base: String) -> String {
    WebPage.document(title: "Files shared with Ferry", base: base, main: main)
  }

  private static let main = String(decoding: PackageResources.share_html, as: UTF8.self)

  /// Asks, then lists the files as links, each with its folders (the saved name keeps them),
  /// and offers them all as one zip archive; marks what this browser has downloaded whole
  /// (asking the sender every 3 s while a download it started may be under way), and says so
  /// when the sharing ended. `download` carries the session, not the token: a link cannot send
  /// a header. Text goes in as text, never markup.
  static let script = String(decoding: PackageResources.share_js, as: UTF8.self)
}
