/// Reads big-endian fields from a payload, throwing ``WireError/truncated(_:)`` at its end.
struct ByteReader {
  private let bytes: [UInt8]
  private var offset = 0
  let type: FrameType

  init(_ bytes: [UInt8], type: FrameType) {
    self.bytes = bytes
    self.type = type
  }

  mutating func bytes(count: Int) throws(WireError) -> [UInt8] {
    guard count >= 0, bytes.count - offset >= count else { throw .truncated(type) }
    defer { offset += count }
    return Array(bytes[offset..<offset + count])
  }

  mutating func uint8() throws(WireError) -> UInt8 {
    try bytes(count: 1)[0]
  }

  mutating func uint16() throws(WireError) -> UInt16 {
    let raw = try bytes(count: 2)
    return UInt16(raw[0]) << 8 | UInt16(raw[1])
  }

  mutating func uint32() throws(WireError) -> UInt32 {
    try bytes(count: 4).reduce(0) { $0 << 8 | UInt32($1) }
  }

  mutating func uint64() throws(WireError) -> UInt64 {
    try bytes(count: 8).reduce(0) { $0 << 8 | UInt64($1) }
  }

  mutating func utf8(count: Int, field: String) throws(WireError) -> String {
    let raw = try bytes(count: count)
    guard let text = String(validating: raw, as: UTF8.self) else {
      throw .invalidField(type, field)
    }
    return text
  }

  mutating func reason() throws(WireError) -> String {
    let length = Int(try uint16())
    guard length <= ControlMessage.maximumReasonSize else {
      throw .invalidField(type, "reason length \(length)")
    }
    return try utf8(count: length, field: "reason")
  }

  /// Whether every byte has been read.
  var isAtEnd: Bool { offset == bytes.count }

  func finish() throws(WireError) {
    guard offset == bytes.count else { throw .trailingBytes(type) }
  }
}
