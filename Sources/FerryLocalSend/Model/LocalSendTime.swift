import Foundation

/// Times as LocalSend's file metadata carries them: RFC 3339 (ISO 8601 with a zone). Written
/// in UTC with milliseconds (`2026-11-27T19:30:05.123Z`), as `ISO8601DateFormatter` writes
/// them with fractional seconds; read to the nanosecond, with any zone (apps send up to nine
/// fraction digits). By hand, as bytes: a formatter goes through ICU and cost more than the rest
/// of a small file's offer entry, and a parser through `Double` lost the last millisecond.
enum LocalSendTime {
  /// `time` (seconds and nanoseconds since 1970) as ISO 8601 UTC with milliseconds (leap
  /// seconds not counted, as POSIX time has none); nil when the year is outside 0...9999. Any
  /// thread.
  static func string(_ time: timespec) -> String? {
    // By hand rather than gmtime_r(3), which under a `right/` TZ counts leap seconds.
    let seconds = Int64(time.tv_sec)
    guard seconds >= -62_167_219_200, seconds <= 253_402_300_799 else { return nil }
    let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
    let secondOfDay = Int(seconds - Int64(days) * 86_400)
    let (year, month, day) = civil(fromDaysSince1970: days)
    let milliseconds = min(999, max(0, Int(time.tv_nsec) / 1_000_000))
    var text = ""
    text.reserveCapacity(24)
    func append(_ value: Int, digits: Int) {
      var divisor = 1
      for _ in 1..<digits { divisor *= 10 }
      var rest = value
      while divisor > 0 {
        text.unicodeScalars.append(Unicode.Scalar(UInt8(48 + rest / divisor)))
        rest %= divisor
        divisor /= 10
      }
    }
    append(year, digits: 4)
    text += "-"
    append(month, digits: 2)
    text += "-"
    append(day, digits: 2)
    text += "T"
    append(secondOfDay / 3600, digits: 2)
    text += ":"
    append(secondOfDay / 60 % 60, digits: 2)
    text += ":"
    append(secondOfDay % 60, digits: 2)
    text += "."
    append(milliseconds, digits: 3)
    text += "Z"
    return text
  }

  /// Reads an RFC 3339 time (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, `T` or a space, any
  /// number of fraction digits, the ninth and beyond dropped; a leap second read as :59) as
  /// seconds and nanoseconds since 1970. Nil for anything else: a missing zone, a field out of
  /// range, a day the month does not have, a character that is not ASCII. Any thread.
  static func parse(_ text: String) -> (seconds: Int64, nanoseconds: UInt32)? {
    guard (20...64).contains(text.utf8.count) else { return nil }
    let bytes = Array(text.utf8)
    var at = 0
    func number(_ digits: Int) -> Int? {
      guard at + digits <= bytes.count else { return nil }
      var value = 0
      for byte in bytes[at..<at + digits] {
        guard (48...57).contains(byte) else { return nil }
        value = value * 10 + Int(byte - 48)
      }
      at += digits
      return value
    }
    func expect(_ allowed: [UInt8]) -> Bool {
      guard at < bytes.count, allowed.contains(bytes[at]) else { return false }
      at += 1
      return true
    }
    guard let year = number(4), expect([0x2D]), let month = number(2), expect([0x2D]),
      let day = number(2), expect([0x54, 0x74, 0x20]), let hour = number(2), expect([0x3A]),
      let minute = number(2), expect([0x3A]), let second = number(2),
      (1...12).contains(month), (1...days(inMonth: month, of: year)).contains(day),
      hour < 24, minute < 60, second <= 60
    else { return nil }
    var nanoseconds = 0
    if expect([0x2E]) {
      var digits = 0
      while at < bytes.count, (48...57).contains(bytes[at]) {
        if digits < 9 { nanoseconds = nanoseconds * 10 + Int(bytes[at] - 48) }
        digits += 1
        at += 1
      }
      guard digits > 0 else { return nil }
      for _ in digits..<max(digits, 9) { nanoseconds *= 10 }
    }
    var offset = 0
    if expect([0x5A, 0x7A]) {
      offset = 0
    } else if at < bytes.count, bytes[at] == 0x2B || bytes[at] == 0x2D {
      let sign = bytes[at] == 0x2D ? -1 : 1
      at += 1
      guard let hours = number(2), expect([0x3A]), let minutes = number(2), hours < 24,
        minutes < 60
      else { return nil }
      offset = sign * (hours * 3600 + minutes * 60)
    } else {
      return nil
    }
    guard at == bytes.count else { return nil }
    let seconds =
      daysSince1970(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60
      + min(second, 59) - offset
    return (Int64(seconds), UInt32(nanoseconds))
  }

  private static func days(inMonth month: Int, of year: Int) -> Int {
    switch month {
    case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
  }

  /// The date (proleptic Gregorian) `days` after 1970-01-01 (H. Hinnant's civil_from_days,
  /// the inverse of ``daysSince1970(year:month:day:)``).
  private static func civil(fromDaysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
    let shifted = days + 719_468
    let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
    let dayOfEra = shifted - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }

  /// Days from 1970-01-01 to the date in the proleptic Gregorian calendar (H. Hinnant's
  /// days_from_civil).
  private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
    let shifted = month <= 2 ? year - 1 : year
    let era = (shifted >= 0 ? shifted : shifted - 399) / 400
    let yearOfEra = shifted - era * 400
    let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }
}
