import Ferry

/// MultipeerConnectivity resource names as Ferry relative paths, and back.
///
/// Any string is a resource name in MultipeerConnectivity; Ferry's names are safe relative
/// paths. A name is sent as one path component: `%`, `/`, control and invisible characters,
/// and a leading `.` are percent-encoded (their UTF-8 bytes), and the receiver decodes them.
/// A `ferry receive` at the other end therefore shows `a%2Fb` for the name `a/b`.
enum ResourceName {
  /// The path component for `name`, nil when it cannot be one (empty, or over 255 bytes once
  /// encoded).
  static func escape(_ name: String) -> String? {
    var escaped = ""
    for scalar in name.unicodeScalars {
      let mustEscape: Bool
      switch scalar.properties.generalCategory {
      case .control, .format, .lineSeparator, .paragraphSeparator: mustEscape = true
      default: mustEscape = scalar == "%" || scalar == "/" || (scalar == "." && escaped.isEmpty)
      }
      if mustEscape {
        for byte in String(scalar).utf8 { escaped += "%" + hex(byte) }
      } else {
        escaped.unicodeScalars.append(scalar)
      }
    }
    guard (try? RelativePath(validating: escaped))?.components.count == 1 else { return nil }
    return escaped
  }

  /// The name `component` encodes: `%XX` sequences decoded, anything else kept as it is.
  static func unescape(_ component: String) -> String {
    guard component.utf8.contains(UInt8(ascii: "%")) else { return component }
    var bytes: [UInt8] = []
    let source = Array(component.utf8)
    var index = 0
    while index < source.count {
      if source[index] == UInt8(ascii: "%"), index + 2 < source.count,
        let high = value(source[index + 1]), let low = value(source[index + 2])
      {
        bytes.append(high << 4 | low)
        index += 3
      } else {
        bytes.append(source[index])
        index += 1
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  private static func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
  }

  private static func value(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
