import FerryAgent

/// A JSON value, serialized compactly with keys in a fixed order so NDJSON lines are stable.
enum JSONValue: Sendable, Equatable {
  case string(String)
  case int(Int)
  case double(Double)
  case bool(Bool)
  case null
  case array([JSONValue])
  /// Keys are written in the order given.
  case object([(String, JSONValue)])

  static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
    lhs.serialized == rhs.serialized
  }

  /// The compact JSON text.
  var serialized: String {
    var out: [UInt8] = []
    out.reserveCapacity(256)
    write(to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Appends the compact JSON text's UTF-8 bytes to `out` (bytes, not `String` appends: an
  /// NDJSON line per file is on a receiver's hot path).
  private func write(to out: inout [UInt8]) {
    switch self {
    case .string(let string): Self.writeString(string, to: &out)
    case .int(let value): out += String(value).utf8
    case .double(let value): out += (value.isFinite ? String(value) : "null").utf8
    case .bool(let value): out += (value ? "true" : "false").utf8
    case .null: out += "null".utf8
    case .array(let values):
      out.append(UInt8(ascii: "["))
      for (index, value) in values.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        value.write(to: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let members):
      out.append(UInt8(ascii: "{"))
      for (index, (key, value)) in members.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        Self.writeString(key, to: &out)
        out.append(UInt8(ascii: ":"))
        value.write(to: &out)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  /// Whether `scalar` is written as a `\uXXXX` escape: every control (C0, DEL, C1), format
  /// (bidirectional overrides and isolates, zero-width characters, BOM, tags) and line or
  /// paragraph separator — what a terminal or a careless reader of the output would act on or
  /// not show. The JSON value stays exact.
  static func escapes(_ scalar: Unicode.Scalar) -> Bool {
    // Printable ASCII first: most of what is written, without a Unicode table lookup.
    if (0x20..<0x7F).contains(scalar.value) { return false }
    switch scalar.properties.generalCategory {
    case .control, .format, .lineSeparator, .paragraphSeparator: return true
    default: return false
    }
  }

  private static func writeString(_ string: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    // Most strings (paths, digests, names) are printable ASCII with nothing to escape: copied
    // as they are, not one scalar at a time.
    var plain = string
    let copied = plain.withUTF8 { bytes -> Bool in
      guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) else {
        return false
      }
      out.append(contentsOf: bytes)
      return true
    }
    if copied {
      out.append(UInt8(ascii: "\""))
      return
    }
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": out += #"\""#.utf8
      case "\\": out += #"\\"#.utf8
      case "\n": out += #"\n"#.utf8
      case "\r": out += #"\r"#.utf8
      case "\t": out += #"\t"#.utf8
      case _ where escapes(scalar):
        // Beyond the BMP (tag characters): as a UTF-16 surrogate pair, as JSON requires.
        for unit in String(scalar).utf16 {
          let hex = String(unit, radix: 16)
          out += ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8
        }
      default: UTF8.encode(scalar) { out.append($0) }
      }
    }
    out.append(UInt8(ascii: "\""))
  }
}

extension JSONValue: Codable {
  /// Written as it is, by ``JSONValueEncoder`` (which takes a JSONValue whole); any other
  /// encoder gets its text.
  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(serialized)
  }

  /// Nothing decodes events: this only lets records hold JSON (``EventFieldNames`` asks for
  /// one, and gets null).
  init(from decoder: any Decoder) throws {
    self = .null
  }
}
