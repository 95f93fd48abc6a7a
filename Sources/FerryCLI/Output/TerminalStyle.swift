import Foundation

/// Colour and weight for what a person reads on standard error: used only when it is a
/// terminal, `NO_COLOR` is unset or empty (no-color.org) and `TERM` is not `dumb`. Applied to
/// text already made terminal-safe (the escapes added here are the program's own).
enum TerminalStyle {
  /// Whether styles are written; decided once, at first use.
  static let enabled: Bool = {
    let environment = ProcessInfo.processInfo.environment
    return StandardStream.error.isTerminal && (environment["NO_COLOR"] ?? "").isEmpty
      && environment["TERM"] != "dumb"
  }()

  /// `text` in bold red: a warning that must not be missed (KEY CHANGED), `error:`.
  static func alert(_ text: String) -> String {
    enabled ? "\u{1B}[1;31m\(text)\u{1B}[0m" : text
  }

  /// `text` in bold: a summary line, the question asked.
  static func strong(_ text: String) -> String {
    enabled ? "\u{1B}[1m\(text)\u{1B}[0m" : text
  }
}
