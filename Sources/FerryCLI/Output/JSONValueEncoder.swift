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

  /// What an encoder writes into: nothing yet, one value, an object or an array. Members and
  /// elements are appended in place (a record's fields cost one append each, not a copy of
  /// those before them).
  final class Node {
    enum Kind { case empty, single, object, array }

    /// A member's or an element's value: written whole, or a container still being filled.
    enum Slot {
      case value(JSONValue)
      case node(Node)

      var value: JSONValue {
        switch self {
        case .value(let value): return value
        case .node(let node): return node.value
        }
      }
    }

    var kind = Kind.empty
    var single = JSONValue.null
    var members: [(String, Slot)] = []
    var elements: [Slot] = []

    var value: JSONValue {
      switch kind {
      case .empty: return .null
      case .single: return single
      case .object: return .object(members.map { ($0.0, $0.1.value) })
      case .array: return .array(elements.map(\.value))
      }
    }

    /// Sets member `key` of this object to `value`.
    func put(_ key: String, _ value: JSONValue) {
      kind = .object
      members.append((key, .value(value)))
    }

    /// A new member `key` of this object, to fill.
    func member(_ key: String) -> Node {
      let child = Node()
      kind = .object
      members.append((key, .node(child)))
      return child
    }

    /// Appends `value` to this array.
    func append(_ value: JSONValue) {
      kind = .array
      elements.append(.value(value))
    }

    /// A new element of this array, to fill.
    func element() -> Node {
      let child = Node()
      kind = .array
      elements.append(.node(child))
      return child
    }

    /// Makes this node the one value `value`.
    func set(_ value: JSONValue) {
      kind = .single
      single = value
    }
  }

  struct NodeEncoder: Encoder {
    let node: Node
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
      if node.kind != .object { node.kind = .object }
      return KeyedEncodingContainer(Keyed<Key>(node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
      if node.kind != .array { node.kind = .array }
      return Unkeyed(node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node) }
  }

  struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    var codingPath: [any CodingKey] = []

    private func put(_ value: JSONValue, _ key: Key) {
      node.put(key.stringValue.snakeCased, value)
    }
    private func put<Value: Encodable>(_ value: Value?, _ key: Key) {
      guard let value else { return put(.null, key) }
      put(JSONValueEncoder.encode(value), key)
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
    var count: Int { node.elements.count }

    mutating func encodeNil() { node.append(.null) }
    mutating func encode<Value: Encodable>(_ value: Value) {
      node.append(JSONValueEncoder.encode(value))
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

    mutating func encodeNil() { node.set(.null) }
    mutating func encode(_ value: Bool) { node.set(.bool(value)) }
    mutating func encode(_ value: String) { node.set(.string(value)) }
    mutating func encode(_ value: Double) { node.set(.double(value)) }
    mutating func encode(_ value: Int) { node.set(.int(value)) }
    mutating func encode<Value: Encodable>(_ value: Value) {
      node.set(JSONValueEncoder.encode(value))
    }
  }
}
