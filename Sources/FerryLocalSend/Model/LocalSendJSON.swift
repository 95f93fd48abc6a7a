import Foundation

/// Why a peer's JSON was refused.
public enum LocalSendJSONError: Error, Equatable, Sendable, CustomStringConvertible {
  /// Larger than ``LocalSendProtocol/Limits/maximumJSONBytes``.
  case tooLarge(Int)
  /// Not JSON of the expected shape.
  case malformed(String)
  /// A field out of its bounds (its name, and what it held, escaped).
  case invalid(String, String)

  /// The error in words, for a log or an HTTP answer.
  public var description: String {
    switch self {
    case .tooLarge(let count): return "a JSON body of \(count) bytes is too large"
    case .malformed(let why): return "malformed JSON: \(why)"
    case .invalid(let field, let value): return "invalid \(field): \(value)"
    }
  }
}

/// Decoding and encoding what LocalSend peers exchange, with every size checked before and
/// after: a peer's JSON is hostile until each field is within its bounds.
enum LocalSendJSON {
  /// Decodes `bytes` as `T` (at most ``LocalSendProtocol/Limits/maximumJSONBytes``).
  ///
  /// - Throws: ``LocalSendJSONError``.
  static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(LocalSendJSONError)
    -> T
  {
    guard bytes.count <= LocalSendProtocol.Limits.maximumJSONBytes else {
      throw .tooLarge(bytes.count)
    }
    do {
      return try JSONDecoder().decode(type, from: Data(bytes))
    } catch let error as DecodingError {
      throw .malformed(describe(error))
    } catch {
      throw .malformed("not JSON")
    }
  }

  /// `value` as JSON bytes (keys sorted: stable output).
  static func encode<T: Encodable>(_ value: T) -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? Array(encoder.encode(value))) ?? Array("{}".utf8)
  }

  /// Checks a short text field: at most ``LocalSendProtocol/Limits/maximumFieldBytes`` bytes.
  static func checkShort(_ text: String, _ field: String, allowEmpty: Bool = false)
    throws(LocalSendJSONError)
  {
    let count = text.utf8.count
    guard count <= LocalSendProtocol.Limits.maximumFieldBytes, allowEmpty || count > 0 else {
      throw .invalid(field, count == 0 ? "empty" : "\(count) bytes")
    }
  }

  /// `text` as it may be shown in an error: at most 64 characters, controls escaped.
  static func shown(_ text: String) -> String {
    let prefix = String(text.unicodeScalars.prefix(64).map { Character($0) })
    return prefix.unicodeScalars.map { scalar -> String in
      (0x20..<0x7F).contains(scalar.value)
        ? String(scalar) : "\\u{\(String(scalar.value, radix: 16))}"
    }.joined() + (text.unicodeScalars.count > 64 ? "…" : "")
  }

  /// The bytes of an even-length hex string, nil if it is not one.
  static func hexBytes(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count.isMultiple(of: 2) else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    var index = 0
    while index < digits.count {
      guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else {
        return nil
      }
      bytes.append(high << 4 | low)
      index += 2
    }
    return bytes
  }

  private static func nibble(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
    default: return nil
    }
  }

  /// A coding path as it may be shown (its keys are the peer's: escaped).
  private static func path(_ keys: [any CodingKey]) -> String {
    shown(keys.map(\.stringValue).joined(separator: "."))
  }

  private static func describe(_ error: DecodingError) -> String {
    switch error {
    case .keyNotFound(let key, _): return "no \(shown(key.stringValue))"
    case .typeMismatch(_, let context), .valueNotFound(_, let context):
      return "wrong type at \(path(context.codingPath))"
    case .dataCorrupted(let context):
      return context.codingPath.isEmpty
        ? "not JSON" : "bad value at \(path(context.codingPath))"
    @unknown default: return "not JSON"
    }
  }
}
