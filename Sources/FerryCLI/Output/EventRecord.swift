/// One NDJSON event (`--json`), as a typed value: its stored properties, in the order they are
/// declared, are the event's fields, named in snake_case after the properties (`bytesSent` is
/// `bytes_sent`): each field name is written once, as a property, and docs/CLI.md is checked
/// against the same names (``fieldNames``, read from the type; ``Event/fields``). A nil
/// property is written as `null`, never left out. ``EventWriter/emit(_:)`` writes one.
///
/// Records are Decodable only so that their field names can be read from the type
/// (``EventFieldNames``); nothing decodes events.
protocol EventRecord: Codable, Sendable {
  /// The events it is: most records are one; records alike in their fields are several (the
  /// writer names which: ``EventWriter/emit(_:as:)``).
  static var events: [Event] { get }

  /// Its fields, in order, as JSON: encoded from its properties, unless a record written once
  /// per file spells them out (tested to be the same).
  var fields: [(String, JSONValue)] { get }
}

extension EventRecord {
  /// Its fields, in order, as JSON, encoded from its properties.
  var fields: [(String, JSONValue)] {
    guard case .object(let members) = JSONValueEncoder.encode(self) else { return [] }
    return members
  }

  /// The names of its fields, in order.
  static var fieldNames: [String] { EventFieldNames.of(Self.self) }
}

extension String {
  /// `bytesPerSecond` as `bytes_per_second`: a property's name as an event's field.
  var snakeCased: String {
    // Most names have no capital: they are their own field names.
    guard utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
      return self
    }
    var result = ""
    for character in self {
      if character.isUppercase {
        result += "_" + character.lowercased()
      } else {
        result.append(character)
      }
    }
    return result
  }
}
