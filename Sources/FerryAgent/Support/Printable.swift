import Ferry

/// Untrusted text made safe for one line of a terminal: control, format, bidirectional,
/// separator and other invisible characters (newlines included) written as visible `\u{XXXX}`
/// escapes, at most `limit` characters (then "…").
package func printable(_ text: String, limit: Int = DisplayText.maximumLength) -> String {
  // Printable ASCII within the limit is shown as it is (once per file received).
  if text.utf8.count <= limit, text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) {
    return text
  }
  let shown = DisplayText.terminalSafe(text).replacing("\n", with: "\\u{A}")
  return shown.count > limit ? String(shown.prefix(limit)) + "…" : shown
}
