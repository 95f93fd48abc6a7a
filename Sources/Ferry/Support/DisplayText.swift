import Foundation

/// Returns `string` with every character a terminal would act on, or that a reader could not
/// see, written as a visible escape `\u{XXXX}` — control characters (Cc: ESC, BEL, newline, …),
/// format characters (Cf: bidirectional overrides, zero-width joiners, …), line, paragraph and
/// non-ASCII space separators (Zl, Zp, Zs), unassigned and private-use code points, and a
/// combining mark at the very start (it would draw over what precedes the text) — and, unless
/// `keepingUnicode`, every other non-ASCII scalar too. `\` and `"` are backslash-escaped, so a
/// quoted string cannot be closed early. Messages that quote untrusted input stay on one
/// printable, unambiguous line.
func escaped(_ string: String, keepingUnicode: Bool = false) -> String {
  var out = ""
  var first = true
  for scalar in string.unicodeScalars {
    defer { first = false }
    if isHidden(scalar, atStart: first) || (!keepingUnicode && !scalar.isASCII) {
      out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      continue
    }
    if scalar == "\\" || scalar == "\"" {
      out.append("\\")
    }
    out.unicodeScalars.append(scalar)
  }
  return out
}

/// Whether `scalar` must not reach a terminal as it is (see ``escaped(_:keepingUnicode:)``).
func isHidden(_ scalar: Unicode.Scalar, atStart: Bool) -> Bool {
  // Printable ASCII first, without a Unicode table lookup: most of what is shown.
  if (0x20..<0x7F).contains(scalar.value) { return false }
  switch scalar.properties.generalCategory {
  case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .unassigned,
    .surrogate:
    return true
  case .spaceSeparator:
    return scalar != " "
  case .nonspacingMark, .enclosingMark, .spacingMark:
    return atStart
  default:
    return false
  }
}

/// Text received from peers (names, paths, reasons), made safe to print.
public enum DisplayText {
  /// The longest text shown, in characters; longer text is cut with `…`.
  public static let maximumLength = 200

  /// `text` with every control, format, bidirectional, separator or otherwise invisible
  /// character written as a visible `\u{XXXX}` escape, `\` and `"` escaped, and cut to
  /// ``maximumLength`` characters. Any thread.
  public static func escaping(_ text: String) -> String {
    let shown = escaped(text, keepingUnicode: true)
    return shown.count > maximumLength ? String(shown.prefix(maximumLength)) + "…" : shown
  }

  /// `"text"`, escaped as ``escaping(_:)``: a name quoted this way cannot pass for what
  /// follows it (`"Alice [38C5 9B11 …] (trusted)" [D27F 6476 …]` shows which part is the name).
  public static func quoted(_ text: String) -> String {
    "\"" + escaping(text) + "\""
  }

  /// `text` for a terminal, whole and uncut: like ``escaping(_:)``, but newlines stay line
  /// breaks and `\` and `"` stay as they are. For lines that mix a program's own words with
  /// text from peers, as a last guard before they are printed.
  public static func terminalSafe(_ text: String) -> String {
    // Printable ASCII and newlines need nothing: the text as it is (once per file shown).
    if text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) || $0 == 0x0A }) { return text }
    var out = ""
    for scalar in text.unicodeScalars {
      if scalar != "\n" && isHidden(scalar, atStart: false) {
        out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  /// Whether `text` holds characters ``escaping(_:)`` would make visible.
  public static func hasHiddenCharacters(_ text: String) -> Bool {
    var first = true
    for scalar in text.unicodeScalars {
      if isHidden(scalar, atStart: first) { return true }
      first = false
    }
    return false
  }

  /// What `text` looks like to a person: invisible characters and variation selectors removed,
  /// spaces collapsed, compatibility forms folded (NFKC: fullwidth `Ａ` → `A`) and letters in
  /// lower case. Two names with the same skeleton are easily mistaken for each other.
  public static func skeleton(_ text: String) -> String {
    var kept = String.UnicodeScalarView()
    var lastWasSpace = true
    for scalar in text.unicodeScalars {
      let category = scalar.properties.generalCategory
      if (0xFE00...0xFE0F).contains(scalar.value) || (0xE0100...0xE01EF).contains(scalar.value) {
        continue
      }
      switch category {
      case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .unassigned:
        continue
      case .spaceSeparator:
        if !lastWasSpace { kept.append(" ") }
        lastWasSpace = true
      default:
        kept.append(scalar)
        lastWasSpace = false
      }
    }
    var result = String(kept)
    if result.hasSuffix(" ") { result.removeLast() }
    return compatibilityFolded(result).lowercased()
  }
}

/// NFKC: compatibility forms folded (`Ａ` → `A`, `ﬁ` → `fi`), then composed.
private func compatibilityFolded(_ text: String) -> String {
  text.precomposedStringWithCompatibilityMapping
}
