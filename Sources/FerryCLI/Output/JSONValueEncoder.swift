/// Turns an `Encodable` value into a ``JSONValue``, keeping the order of its keys (as its
/// `encode(to:)` writes them, which for a synthesized one is the order of declaration), naming
/// them in snake_case, and writing a nil optional as `null` rather than leaving it out. A
/// ``JSONValue`` inside is taken as it is (its own keys untouched). Never throws: event records
/// hold nothing that cannot be encoded.
enum JSONValueEncoder {
  /// `value` as JSON.
  static func encode<Value: Encodable>(_ value: Value) -> JSONValue {
    if let json = value as? JSONValue { return json }
    let node = Node()
    try? value.encode(to: NodeEncoder(node: node))
    return node.value
  }

  /// What an encoder writes into: nothing yet, one value, an object or an array.
  final class Node {
    enum Content {
      case empty
      case single(JSONValue)
      case object([(String, Node)])
      case array([Node])
    }

    var content = Content.empty

    var value: JSONValue {
      switch content {
      case .empty: return .null
      case .single(let value): return value
      case .object(let members): return .object(members.map { ($0.0, $0.1.value) })
      case .array(let elements): return .array(elements.map(\.value))
      }
    }

    /// A new member `key` of this object.
    func member(_ key: String) -> Node {
      let child = Node()
      if case .object(let members) = content {
        content = .object(members + [(key, child)])
      } else {
        content = .object([(key, child)])
      }
      return child
    }

    /// A new element of this array.
    func element() -> Node {
      let child = Node()
      if case .array(let elements) = content {
        content = .array(elements + [child])
      } else {
        content = .array([child])
      }
      return child
    }
  }

  struct NodeEncoder: Encoder {
    let node: Node
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
      if case .object = node.content {} else { node.content = .object([]) }
      return KeyedEncodingContainer(Keyed<Key>(node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
      if case .array = node.content {} else { node.content = .array([]) }
      return Unkeyed(node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node) }
  }

  struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    var codingPath: [any CodingKey] = []

    private func put(_ value: JSONValue, _ key: Key) {
      node.member(key.stringValue.snakeCased).content = .single(value)
    }
    private func put<Value: Encodable>(_ value: Value?, _ key: Key) {
      put(value.map(JSONValueEncoder.encode) ?? .null, key)
    }

    mutating func encodeNil(forKey key: Key) { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) { put(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) { put(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) { put(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) { put(.int(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) { put(.int(Int(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) { put(.int(Int(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) { put(.int(Int(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) { put(.int(Int(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) { put(.int(Int(clamping: value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) { put(.int(Int(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) { put(.int(Int(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) { put(.int(Int(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) { put(.int(Int(clamping: value)), key) }
    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) {
      put(JSONValueEncoder.encode(value), key)
    }

    // A nil optional is written as null: every field of an event is always there.
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) { put(value, key) }
    mutating func encodeIfPresent<Value: Encodable>(_ value: Value?, forKey key: Key) {
      put(value, key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
      keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
      NodeEncoder(node: node.member(key.stringValue.snakeCased)).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
      NodeEncoder(node: node.member(key.stringValue.snakeCased)).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.member("super")) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
      NodeEncoder(node: node.member(key.stringValue.snakeCased))
    }
  }

  struct Unkeyed: UnkeyedEncodingContainer {
    let node: Node
    var codingPath: [any CodingKey] = []
    var count: Int {
      if case .array(let elements) = node.content { return elements.count }
      return 0
    }

    mutating func encodeNil() { node.element().content = .single(.null) }
    mutating func encode<Value: Encodable>(_ value: Value) {
      node.element().content = .single(JSONValueEncoder.encode(value))
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
      -> KeyedEncodingContainer<NestedKey>
    {
      NodeEncoder(node: node.element()).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
      NodeEncoder(node: node.element()).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.element()) }
  }

  struct Single: SingleValueEncodingContainer {
    let node: Node
    var codingPath: [any CodingKey] = []

    mutating func encodeNil() { node.content = .single(.null) }
    mutating func encode(_ value: Bool) { node.content = .single(.bool(value)) }
    mutating func encode(_ value: String) { node.content = .single(.string(value)) }
    mutating func encode(_ value: Double) { node.content = .single(.double(value)) }
    mutating func encode(_ value: Int) { node.content = .single(.int(value)) }
    mutating func encode<Value: Encodable>(_ value: Value) {
      node.content = .single(JSONValueEncoder.encode(value))
    }
  }
}
