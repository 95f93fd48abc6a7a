/// The field names of an ``EventRecord`` type, read from the type itself: its synthesized
/// `init(from:)` asks a decoder for each of its keys in turn, and this decoder only writes them
/// down (answering every question with an empty value: no text, 0, false, no elements, nil).
/// So the names docs/CLI.md is checked against are the ones the records write.
enum EventFieldNames {
  /// The snake_case names of `type`'s fields, in order.
  static func of<Record: Decodable>(_ type: Record.Type) -> [String] {
    let keys = Keys()
    _ = try? Record(from: Recorder(keys: keys))
    return keys.names
  }

  /// The keys asked for, in order, each once.
  final class Keys {
    var names: [String] = []

    func note(_ key: any CodingKey) {
      let name = key.stringValue.snakeCased
      if !names.contains(name) { names.append(name) }
    }
  }

  struct Recorder: Decoder {
    let keys: Keys
    /// Whether keys asked of this decoder are a record's own (not a nested value's).
    var top = true
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
      KeyedDecodingContainer(Keyed<Key>(keys: keys, top: top))
    }
    func unkeyedContainer() -> any UnkeyedDecodingContainer { Empty() }
    func singleValueContainer() -> any SingleValueDecodingContainer { Zero() }
  }

  struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let keys: Keys
    let top: Bool
    var codingPath: [any CodingKey] = []
    var allKeys: [Key] { [] }

    private func note(_ key: Key) { if top { keys.note(key) } }

    func contains(_ key: Key) -> Bool {
      note(key)
      return true
    }
    func decodeNil(forKey key: Key) -> Bool {
      note(key)
      return true
    }
    func decode(_ type: Bool.Type, forKey key: Key) -> Bool {
      note(key)
      return false
    }
    func decode(_ type: String.Type, forKey key: Key) -> String {
      note(key)
      return ""
    }
    func decode(_ type: Double.Type, forKey key: Key) -> Double {
      note(key)
      return 0
    }
    func decode(_ type: Float.Type, forKey key: Key) -> Float {
      note(key)
      return 0
    }
    func decode(_ type: Int.Type, forKey key: Key) -> Int {
      note(key)
      return 0
    }
    func decode(_ type: Int8.Type, forKey key: Key) -> Int8 {
      note(key)
      return 0
    }
    func decode(_ type: Int16.Type, forKey key: Key) -> Int16 {
      note(key)
      return 0
    }
    func decode(_ type: Int32.Type, forKey key: Key) -> Int32 {
      note(key)
      return 0
    }
    func decode(_ type: Int64.Type, forKey key: Key) -> Int64 {
      note(key)
      return 0
    }
    func decode(_ type: UInt.Type, forKey key: Key) -> UInt {
      note(key)
      return 0
    }
    func decode(_ type: UInt8.Type, forKey key: Key) -> UInt8 {
      note(key)
      return 0
    }
    func decode(_ type: UInt16.Type, forKey key: Key) -> UInt16 {
      note(key)
      return 0
    }
    func decode(_ type: UInt32.Type, forKey key: Key) -> UInt32 {
      note(key)
      return 0
    }
    func decode(_ type: UInt64.Type, forKey key: Key) -> UInt64 {
      note(key)
      return 0
    }
    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value {
      note(key)
      return try Value(from: Recorder(keys: keys, top: false))
    }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key)
      -> KeyedDecodingContainer<NestedKey>
    {
      note(key)
      return KeyedDecodingContainer(Keyed<NestedKey>(keys: keys, top: false))
    }
    func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedDecodingContainer {
      note(key)
      return Empty()
    }
    func superDecoder() -> any Decoder { Recorder(keys: keys, top: false) }
    func superDecoder(forKey key: Key) -> any Decoder { Recorder(keys: keys, top: false) }
  }

  /// An array with no elements.
  struct Empty: UnkeyedDecodingContainer {
    var codingPath: [any CodingKey] = []
    var count: Int? { 0 }
    var isAtEnd: Bool { true }
    var currentIndex: Int { 0 }

    struct Ended: Error {}

    mutating func decodeNil() -> Bool { true }
    mutating func decode<Value: Decodable>(_ type: Value.Type) throws -> Value { throw Ended() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
      -> KeyedDecodingContainer<NestedKey>
    { throw Ended() }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Ended() }
    mutating func superDecoder() throws -> any Decoder { throw Ended() }
  }

  /// A single value: empty.
  struct Zero: SingleValueDecodingContainer {
    var codingPath: [any CodingKey] = []

    func decodeNil() -> Bool { true }
    func decode(_ type: Bool.Type) -> Bool { false }
    func decode(_ type: String.Type) -> String { "" }
    func decode(_ type: Double.Type) -> Double { 0 }
    func decode(_ type: Int.Type) -> Int { 0 }
    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
      try Value(from: Recorder(keys: Keys(), top: false))
    }
  }
}
