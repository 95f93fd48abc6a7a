import Ferry

/// MultipeerConnectivity resource names as Ferry relative paths, and back.
///
/// Any string is a resource name in MultipeerConnectivity; Ferry's names are safe relative
/// paths. A name is sent as one path component: `%`, `/`, control and invisible characters,
/// and a leading `.` are percent-encoded (their UTF-8 bytes), and the receiver decodes them.
/// A `ferry receive` at the other end therefore shows `a%2Fb` for the name `a/b`.
///
/// The receiver never hands its delegate a name that is empty, `.` or `..`, or that holds NUL:
/// a name that decodes to one of those is delivered in the form it crossed in (`%2E.` for
/// `..`, `nul%00byte`), which Ferry checked as a path.
enum ResourceName {
  /// The path component for `name`, nil when it cannot be one (empty, or over 255 bytes once
  /// encoded).
  static func escape(_ name: String) -> String? {
    let escaped = encoded(name)
    guard (try? RelativePath(validating: escaped))?.components.count == 1 else { return nil }
    return escaped
  }

  /// The name to hand the delegate for `component`, a name as Ferry received it: `%XX`
  /// sequences decoded, anything else kept as it is. When the decoded name is not
  /// ``isDeliverable(_:)``, `component` itself (a checked path: never empty, `.` or `..`, and
  /// without control characters); should that not be deliverable either, every byte of it
  /// encoded.
  static func unescape(_ component: String) -> String {
    let decoded = self.decoded(component)
    if isDeliverable(decoded) { return decoded }
    if isDeliverable(component) { return component }
    return component.isEmpty ? "%" : component.utf8.map { "%" + hex($0) }.joined()
  }

  /// Whether `name` may reach the delegate: not empty, `.` or `..`, and without NUL (a name
  /// an application might use as a file name, or pass to C, as it is).
  static func isDeliverable(_ name: String) -> Bool {
    !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(0)
  }

  /// `name` with `%`, `/`, control and invisible characters and a leading `.` percent-encoded.
  private static func encoded(_ name: String) -> String {
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
    return escaped
  }

  /// `component` with its `%XX` sequences decoded (invalid UTF-8 becomes U+FFFD).
  private static func decoded(_ component: String) -> String {
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
