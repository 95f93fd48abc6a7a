/// The header of a frame, parsed before its payload has arrived.
package struct FrameHeader: Hashable, Sendable {
  /// The frame's type.
  package var type: FrameType
  /// The frame's channel.
  package var channel: UInt32
  /// The payload size in bytes.
  package var payloadSize: Int

  /// Parses a header from the first 9 bytes of `bytes`, checking the type and the payload size
  /// against ``FrameType/maximumPayloadSize``.
  ///
  /// - Returns: nil when fewer than 9 bytes are available.
  /// - Throws: ``WireError`` for a length below 5, an unknown type, or a payload over the
  ///   type's cap — all of which mean the connection must be closed.
  package static func parse<Bytes: RandomAccessCollection>(_ bytes: Bytes) throws(WireError)
    -> FrameHeader?
  where Bytes.Element == UInt8, Bytes.Index == Int {
    guard bytes.count >= Frame.headerSize else { return nil }
    let base = bytes.startIndex
    let length = bytes.readBigEndianUInt32(at: base)
    guard length >= Frame.lengthOverhead else { throw .lengthTooSmall(length) }
    guard let type = FrameType(rawValue: bytes[base + 4]) else {
      throw .unknownFrameType(bytes[base + 4])
    }
    let payloadSize = Int(length - Frame.lengthOverhead)
    guard payloadSize <= type.maximumPayloadSize else {
      throw .payloadTooLarge(type: type, size: payloadSize, limit: type.maximumPayloadSize)
    }
    return FrameHeader(
      type: type, channel: bytes.readBigEndianUInt32(at: base + 5), payloadSize: payloadSize)
  }
}
