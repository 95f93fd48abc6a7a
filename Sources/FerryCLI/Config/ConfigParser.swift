import FerryAgent

/// Reads a config file's bytes item by item: a table header or a key/value pair (see
/// ``ConfigFile`` for the subset of TOML it accepts). Every mistake is a ``ConfigError``
/// naming its line; nothing traps.
struct ConfigParser {
  /// One line's worth of meaning.
  enum Item {
    case table(String, line: Int)
    /// `key = value`; a dotted key (`receive.dir = …`) has more than one part.
    case pair([String], ConfigValue)
  }

  /// Arrays nest at most this deep (a file of brackets must not exhaust the stack).
  static let maximumDepth = 8

  private let bytes: [UInt8]
  private var index = 0
  private var line = 1

  init(bytes: [UInt8]) {
    self.bytes = bytes
  }

  /// The next table header or pair; nil at the end of the file.
  mutating func nextItem() throws(ConfigError) -> Item? {
    skipBlankLines()
    guard let byte = peek() else { return nil }
    let item: Item
    if byte == UInt8(ascii: "[") {
      let start = line
      index += 1
      skipSpaces()
      // A dotted name (`[peers.office]`) is one table of Ferry's, named with its dots.
      var parts = [try key()]
      skipSpaces()
      while peek() == UInt8(ascii: ".") {
        index += 1
        skipSpaces()
        parts.append(try key())
        skipSpaces()
      }
      try expect("]", "']' to end the table name")
      item = .table(parts.joined(separator: "."), line: start)
    } else {
      var parts = [try key()]
      skipSpaces()
      while peek() == UInt8(ascii: ".") {
        index += 1
        skipSpaces()
        parts.append(try key())
        skipSpaces()
      }
      try expect("=", "'=' after '\(parts.joined(separator: "."))'")
      skipSpaces()
      item = .pair(parts, try value(depth: 0))
    }
    try endOfLine()
    return item
  }

  // MARK: - Values

  private mutating func value(depth: Int) throws(ConfigError) -> ConfigValue {
    let start = line
    guard let byte = peek() else { throw fail("a value is missing") }
    switch byte {
    case UInt8(ascii: "\""):
      return ConfigValue(kind: .string(try basicString()), line: start)
    case UInt8(ascii: "'"):
      return ConfigValue(kind: .string(try literalString()), line: start)
    case UInt8(ascii: "["):
      return ConfigValue(kind: .array(try array(depth: depth + 1)), line: start)
    case UInt8(ascii: "t"), UInt8(ascii: "f"):
      let word = run { Self.isBareKey($0) }
      guard word == "true" || word == "false" else {
        throw fail("'\(word)' is not a value (strings go in quotes)")
      }
      return ConfigValue(kind: .boolean(word == "true"), line: start)
    case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      return ConfigValue(kind: try number(), line: start)
    default:
      let word = run { Self.isBareKey($0) }
      throw fail(
        word.isEmpty ? "a value is missing" : "'\(word)' is not a value (strings go in quotes)")
    }
  }

  private mutating func array(depth: Int) throws(ConfigError) -> [ConfigValue] {
    guard depth <= Self.maximumDepth else { throw fail("lists nested too deep") }
    index += 1  // [
    var elements: [ConfigValue] = []
    while true {
      skipBlankLines()
      guard let byte = peek() else { throw fail("the list is not closed with ']'") }
      if byte == UInt8(ascii: "]") {
        index += 1
        return elements
      }
      elements.append(try value(depth: depth))
      skipBlankLines()
      if peek() == nil {
        throw fail("the list is not closed with ']'")
      } else if peek() == UInt8(ascii: ",") {
        index += 1
      } else if peek() != UInt8(ascii: "]") {
        throw fail("',' or ']' expected in the list")
      }
    }
  }

  private mutating func number() throws(ConfigError) -> ConfigValue.Kind {
    let text = run {
      Self.isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
        || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "e")
        || $0 == UInt8(ascii: "E")
    }
    // Underscores only between digits, as TOML says.
    let scalars = Array(text.utf8)
    for (position, byte) in scalars.enumerated() where byte == UInt8(ascii: "_") {
      guard position > 0, position + 1 < scalars.count, Self.isDigit(scalars[position - 1]),
        Self.isDigit(scalars[position + 1])
      else { throw fail("'\(text)' is not a number") }
    }
    let plain = text.replacingOccurrences(of: "_", with: "")
    if let integer = Int(plain) { return .integer(integer) }
    if plain.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }),
      plain.utf8.last.map(Self.isDigit) == true, let float = Double(plain), float.isFinite
    {
      return .float(float)
    }
    throw fail("'\(text)' is not a number (or is too large)")
  }

  // MARK: - Strings

  private mutating func basicString() throws(ConfigError) -> String {
    index += 1  // "
    var result: [UInt8] = []
    while true {
      guard let byte = peek() else { throw fail("the string is not closed with '\"'") }
      index += 1
      switch byte {
      case UInt8(ascii: "\""):
        return String(decoding: result, as: UTF8.self)
      case UInt8(ascii: "\\"):
        guard let escaped = peek() else { throw fail("the string is not closed with '\"'") }
        index += 1
        switch escaped {
        case UInt8(ascii: "\""): result.append(escaped)
        case UInt8(ascii: "\\"): result.append(escaped)
        case UInt8(ascii: "n"), UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "b"),
          UInt8(ascii: "f"), UInt8(ascii: "e"):
          // TOML's escapes for control characters: none is allowed in a value here.
          throw fail(
            "'\\\(Character(Unicode.Scalar(escaped)))' is a control character: not allowed in a string"
          )
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
          result.append(contentsOf: try unicodeEscape(digits: escaped == UInt8(ascii: "u") ? 4 : 8))
        default:
          throw fail("'\\\(Character(Unicode.Scalar(escaped)))' is not an escape this file knows")
        }
      default:
        try checkInString(byte)
        result.append(byte)
      }
    }
  }

  private mutating func literalString() throws(ConfigError) -> String {
    index += 1  // '
    var result: [UInt8] = []
    while true {
      guard let byte = peek() else { throw fail("the string is not closed with \"'\"") }
      index += 1
      if byte == UInt8(ascii: "'") { return String(decoding: result, as: UTF8.self) }
      try checkInString(byte)
      result.append(byte)
    }
  }

  /// A string's own byte: no control character, no line end before its closing quote.
  private func checkInString(_ byte: UInt8) throws(ConfigError) {
    guard !Self.isControl(byte) else {
      throw fail(
        byte == 0x0A ? "the string is not closed on its line" : "a control character in a string")
    }
  }

  private mutating func unicodeEscape(digits: Int) throws(ConfigError) -> [UInt8] {
    guard index + digits <= bytes.count,
      let code = UInt32(String(decoding: bytes[index..<index + digits], as: UTF8.self), radix: 16),
      let scalar = Unicode.Scalar(code), !Self.isControl(scalar)
    else { throw fail("a \\u escape needs \(digits) hex digits naming a printable character") }
    index += digits
    return Array(String(Character(scalar)).utf8)
  }

  // MARK: - Keys, spaces, lines

  private mutating func key() throws(ConfigError) -> String {
    let name = run { Self.isBareKey($0) }
    guard !name.isEmpty else {
      guard let byte = peek() else { throw fail("a key is missing") }
      throw fail(
        Self.isControl(byte) || byte >= 0x80
          ? "a key is made of letters, digits, '_' and '-'"
          : "'\(Character(Unicode.Scalar(byte)))' cannot start a key")
    }
    return name
  }

  /// Spaces and a comment, then a newline or the end.
  private mutating func endOfLine() throws(ConfigError) {
    skipSpaces()
    skipComment()
    guard let byte = peek() else { return }
    guard byte == 0x0A else { throw fail("unexpected text after the value") }
  }

  private mutating func skipBlankLines() {
    while true {
      skipSpaces()
      skipComment()
      guard peek() == 0x0A else { return }
      index += 1
      line += 1
    }
  }

  private mutating func skipSpaces() {
    while let byte = peek(), byte == 0x20 || byte == 0x09 { index += 1 }
    // A CR belongs to a CRLF line end.
    if peek() == 0x0D, index + 1 < bytes.count, bytes[index + 1] == 0x0A { index += 1 }
  }

  private mutating func skipComment() {
    guard peek() == UInt8(ascii: "#") else { return }
    // Control characters in comments are let be: nothing reads them.
    while let byte = peek(), byte != 0x0A { index += 1 }
  }

  private mutating func expect(_ character: Unicode.Scalar, _ what: String) throws(ConfigError) {
    guard peek() == UInt8(ascii: character) else { throw fail("\(what) expected") }
    index += 1
  }

  private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

  private mutating func run(while accepted: (UInt8) -> Bool) -> String {
    let start = index
    while let byte = peek(), accepted(byte) { index += 1 }
    return String(decoding: bytes[start..<index], as: UTF8.self)
  }

  private func fail(_ message: String) -> ConfigError {
    ConfigError(line: line, message: message)
  }

  private static func isBareKey(_ byte: UInt8) -> Bool {
    isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
      || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
  }

  private static func isDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
  }

  /// C0 controls but tab, and DEL.
  private static func isControl(_ byte: UInt8) -> Bool {
    (byte < 0x20 && byte != 0x09) || byte == 0x7F
  }

  private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
  }
}
