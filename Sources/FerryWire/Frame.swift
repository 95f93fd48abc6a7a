/// One frame on a Ferry connection (docs/PROTOCOL.md, "Frames").
///
/// ```
/// offset  size  field
///      0     4  length   UInt32, big-endian: bytes after this field (5 + payload size)
///      4     1  type     FrameType
///      5     4  channel  UInt32, big-endian: 0 for control frames
///      9     n  payload
/// ```
package struct Frame: Hashable, Sendable {
  /// The frame's type.
  package var type: FrameType
  /// The channel the frame belongs to; 0 for control frames.
  package var channel: UInt32
  /// The payload bytes.
  package var payload: [UInt8]

  /// Creates a frame.
  package init(type: FrameType, channel: UInt32 = 0, payload: [UInt8] = []) {
    self.type = type
    self.channel = channel
    self.payload = payload
  }

  /// Size of the length, type and channel fields.
  package static let headerSize = 9
  /// Bytes counted by `length` besides the payload (type and channel).
  static let lengthOverhead: UInt32 = 5

  /// The whole frame as bytes.
  package var encoded: [UInt8] {
    var bytes = Frame.header(type: type, channel: channel, payloadSize: payload.count)
    bytes += payload
    return bytes
  }

  /// The 9 header bytes for a frame whose payload has `payloadSize` bytes.
  package static func header(type: FrameType, channel: UInt32, payloadSize: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(headerSize)
    bytes.appendBigEndian(UInt32(payloadSize) + lengthOverhead)
    bytes.append(type.rawValue)
    bytes.appendBigEndian(channel)
    return bytes
  }
}
