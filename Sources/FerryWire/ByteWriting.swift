// Big-endian writers and readers of the protocol's fixed-size fields.
extension Array where Element == UInt8 {
  /// Appends `text` as a u16 length and its UTF-8 bytes, truncated at a character boundary to at
  /// most `maximumBytes` so that encoding cannot fail.
  package mutating func appendText(_ text: String, maximumBytes: Int) {
    var shown = Substring(text)
    while shown.utf8.count > maximumBytes { shown = shown.dropLast() }
    appendBigEndian(UInt16(shown.utf8.count))
    self += shown.utf8
  }

  package mutating func appendBigEndian(_ value: UInt16) {
    append(UInt8(value >> 8))
    append(UInt8(value & 0xFF))
  }

  package mutating func appendBigEndian(_ value: UInt32) {
    for shift in stride(from: 24, through: 0, by: -8) {
      append(UInt8((value >> UInt32(shift)) & 0xFF))
    }
  }

  package mutating func appendBigEndian(_ value: UInt64) {
    for shift in stride(from: 56, through: 0, by: -8) {
      append(UInt8((value >> UInt64(shift)) & 0xFF))
    }
  }
}

extension RandomAccessCollection where Element == UInt8, Index == Int {
  package func readBigEndianUInt32(at index: Int) -> UInt32 {
    (UInt32(self[index]) << 24) | (UInt32(self[index + 1]) << 16) | (UInt32(self[index + 2]) << 8)
      | UInt32(self[index + 3])
  }
}
