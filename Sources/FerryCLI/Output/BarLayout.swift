import Ferry
import Foundation

/// A progress line laid out for a terminal's width, counted in display columns (a CJK
/// character or an emoji takes two, a combining mark none). What gives way first is the bar
/// (down to 10 columns), then the name (down to 8, its end kept), then the ETA, the rate and
/// the file count, in that order, then more of the bar and the name; the percentage and the
/// sizes stay as long as they fit at all.
enum BarLayout {
  /// `label [====    ]  42%  1.2 MB/3.0 MB` followed by `extras` (the rate, the ETA, the
  /// file count, each with its leading spaces), fitted to `columns` (the last one left free).
  /// While the total is not known (`totalKnown` false: a streamed file is still open), the bar
  /// stays empty and the line reads `label [      ]  ...  1.2 MB/?`.
  static func line(
    label: String, done: Int64, total: Int64, totalKnown: Bool = true,
    extras: (rate: String?, eta: String?, files: String?),
    columns: Int, bar preferredBar: Int, name preferredName: Int
  ) -> String {
    let fraction =
      !totalKnown ? 0 : total > 0 ? min(1, max(0, Double(done) / Double(total))) : 1
    let core =
      "] " + (totalKnown ? String(format: "%3d%%", Int(fraction * 100)) : " ...")
      + "  \(Quantity.bytes(UInt64(max(0, done))))/"
      + (totalKnown ? Quantity.bytes(UInt64(max(0, total))) : "?")
    var extras = extras
    func tail() -> String { (extras.rate ?? "") + (extras.eta ?? "") + (extras.files ?? "") }
    let budget = max(1, columns - 1)
    let labelColumns = width(label)
    var name = min(labelColumns, preferredName)
    var bar = preferredBar
    func used() -> Int { (name > 0 ? name + 1 : 0) + 1 + bar + width(core) + width(tail()) }
    if used() > budget { bar = max(10, bar - (used() - budget)) }
    if used() > budget { name = max(min(8, labelColumns), name - (used() - budget)) }
    if used() > budget { extras.eta = nil }
    if used() > budget { extras.rate = nil }
    if used() > budget { extras.files = nil }
    // Narrower still: a stub of a bar, then less of the name (none at last).
    if used() > budget { bar = max(4, bar - (used() - budget)) }
    if used() > budget { name = max(0, name - (used() - budget)) }
    let filled = min(bar, max(0, Int(fraction * Double(bar))))
    let shown = name > 0 ? shortened(label, to: name) + " " : ""
    let text =
      shown + "[" + String(repeating: "=", count: filled)
      + String(repeating: " ", count: bar - filled) + core + tail()
    return fitted(text, to: columns)
  }

  /// The columns `text` takes on a terminal.
  static func width(_ text: String) -> Int {
    text.unicodeScalars.reduce(0) { $0 + width(of: $1) }
  }

  /// `text` cut to leave the last column free (a character in the last column makes some
  /// terminals wrap).
  static func fitted(_ text: String, to columns: Int) -> String {
    let limit = max(1, columns - 1)
    guard width(text) > limit else { return text }
    var result = ""
    var used = 0
    for character in text {
      let columns = width(String(character))
      if used + columns > limit { break }
      result.append(character)
      used += columns
    }
    return result
  }

  /// `text` in at most `limit` columns: its end, after "…", when it is longer.
  static func shortened(_ text: String, to limit: Int) -> String {
    guard width(text) > limit else { return text }
    var kept: [Character] = []
    var used = 1  // the "…"
    for character in text.reversed() {
      let columns = width(String(character))
      if used + columns > limit { break }
      kept.append(character)
      used += columns
    }
    return "…" + String(kept.reversed())
  }

  /// Two columns for East Asian wide and fullwidth characters and emoji, none for combining
  /// marks and format characters, one otherwise.
  private static func width(of scalar: Unicode.Scalar) -> Int {
    switch scalar.properties.generalCategory {
    case .nonspacingMark, .enclosingMark, .format: return 0
    default: break
    }
    switch scalar.value {
    case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
      0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
      0xFFE0...0xFFE6, 0x231A...0x231B, 0x23E9...0x23FA, 0x2600...0x27BF, 0x2B00...0x2BFF,
      0x1F000...0x1FAFF, 0x20000...0x3FFFD:
      // (Symbols that some terminals draw narrow count two: a line a column short is
      // harmless, one a column long wraps and breaks the next redraw.)
      return 2
    default:
      return 1
    }
  }
}
