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
    var out = ""
    write(to: &out)
    return out
  }

  private func write(to out: inout String) {
    switch self {
    case .string(let string): writeString(string, to: &out)
    case .int(let value): out += String(value)
    case .double(let value): out += value.isFinite ? String(value) : "null"
    case .bool(let value): out += value ? "true" : "false"
    case .null: out += "null"
    case .array(let values):
      out += "["
      for (index, value) in values.enumerated() {
        if index > 0 { out += "," }
        value.write(to: &out)
      }
      out += "]"
    case .object(let members):
      out += "{"
      for (index, (key, value)) in members.enumerated() {
        if index > 0 { out += "," }
        writeString(key, to: &out)
        out += ":"
        value.write(to: &out)
      }
      out += "}"
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

  private func writeString(_ string: String, to out: inout String) {
    out += "\""
    // Most strings (paths, digests, names) are printable ASCII with nothing to escape: one
    // append, not one per character.
    if string.utf8.allSatisfy({ (0x20..<0x7F).contains($0) && $0 != 0x22 && $0 != 0x5C }) {
      out += string
      out += "\""
      return
    }
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where Self.escapes(scalar):
        // Beyond the BMP (tag characters): as a UTF-16 surrogate pair, as JSON requires.
        for unit in String(scalar).utf16 {
          let hex = String(unit, radix: 16)
          out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
      default: out.unicodeScalars.append(scalar)
      }
    }
    out += "\""
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
