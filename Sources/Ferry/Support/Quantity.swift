import Foundation

/// Counts and sizes as people read them: `1 file`, `3 files`, `1 byte`, `999 bytes`,
/// `12 KB`, `1.5 GB` (decimal units, as `ls -h --si` and most file managers show them).
public enum Quantity {
  /// `bytes` in decimal units: `1 byte`, `999 bytes`, `12 KB`, `1.5 GB`. Any thread.
  public static func bytes(_ bytes: UInt64) -> String {
    if bytes < 1000 { return count(Int(bytes), "byte") }
    let units = ["KB", "MB", "GB", "TB", "PB", "EB"]
    var value = Double(bytes) / 1000
    var unit = 0
    while value >= 999.5 && unit < units.count - 1 {
      value /= 1000
      unit += 1
    }
    return String(format: value < 9.95 ? "%.1f" : "%.0f", value) + " " + units[unit]
  }

  /// `count` and `noun`, with an `s` but for 1: `1 file`, `0 files`, `55 files`. Any thread.
  public static func count(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
  }
}
