/// One frame on a Ferry connection (docs/PROTOCOL.md, "Frames").
///
/// ```
/// offset  size  field
///      0     4  length   UInt32, big-endian: bytes after this field (5 + payload size)
///      4     1  type     FrameType
///      5     4  channel  UInt32, big-endian: 0 for control frames
///      9     n  payload
/// ```
public struct Frame: Hashable, Sendable {
  /// The frame's type.
  public var type: FrameType
  /// The channel the frame belongs to; 0 for control frames.
  public var channel: UInt32
  /// The payload bytes.
  public var payload: [UInt8]

  /// Creates a frame.
  public init(type: FrameType, channel: UInt32 = 0, payload: [UInt8] = []) {
    self.type = type
    self.channel = channel
    self.payload = payload
  }

  /// Size of the length, type and channel fields.
  public static let headerSize = 9
  /// Bytes counted by `length` besides the payload (type and channel).
  static let lengthOverhead: UInt32 = 5

  /// The whole frame as bytes.
  public var encoded: [UInt8] {
    var bytes = Frame.header(type: type, channel: channel, payloadSize: payload.count)
    bytes += payload
    return bytes
  }

  /// The 9 header bytes for a frame whose payload has `payloadSize` bytes.
  public static func header(type: FrameType, channel: UInt32, payloadSize: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(headerSize)
    bytes.appendBigEndian(UInt32(payloadSize) + lengthOverhead)
    bytes.append(type.rawValue)
    bytes.appendBigEndian(channel)
    return bytes
  }
}

/// The header of a frame, parsed before its payload has arrived.
public struct FrameHeader: Hashable, Sendable {
  /// The frame's type.
  public var type: FrameType
  /// The frame's channel.
  public var channel: UInt32
  /// The payload size in bytes.
  public var payloadSize: Int

  /// Parses a header from the first 9 bytes of `bytes`, checking the type and the payload size
  /// against ``FrameType/maximumPayloadSize``.
  ///
  /// - Returns: nil when fewer than 9 bytes are available.
  /// - Throws: ``WireError`` for a length below 5, an unknown type, or a payload over the
  ///   type's cap — all of which mean the connection must be closed.
  public static func parse<Bytes: RandomAccessCollection>(_ bytes: Bytes) throws(WireError)
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

/// Splits a byte stream into frames. Pure: feed it bytes with ``append(_:)`` and take frames
/// with ``next()``; it never does I/O. The first error leaves it failed: the connection must be
/// closed, since the stream can no longer be trusted.
public struct FrameDecoder: Sendable {
  private var buffer: [UInt8] = []
  private var start = 0
  private var failure: WireError?

  /// Creates an empty decoder.
  public init() {}

  /// Adds received bytes.
  public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
    if start > 0 && start >= buffer.count / 2 {
      buffer.removeFirst(start)
      start = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// The next complete frame, or nil when more bytes are needed.
  ///
  /// - Throws: ``WireError`` when the bytes are not a valid frame; every later call throws it
  ///   again.
  public mutating func next() throws(WireError) -> Frame? {
    if let failure { throw failure }
    do {
      let available = buffer[start...]
      guard let header = try FrameHeader.parse(available) else { return nil }
      let total = Frame.headerSize + header.payloadSize
      guard available.count >= total else { return nil }
      let payloadStart = start + Frame.headerSize
      let frame = Frame(
        type: header.type, channel: header.channel,
        payload: Array(buffer[payloadStart..<(payloadStart + header.payloadSize)]))
      start += total
      return frame
    } catch {
      failure = error
      throw error
    }
  }
}

/// Why bytes received are not valid Ferry protocol.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The length field is below 5 (it must count the type and channel).
  case lengthTooSmall(UInt32)
  /// The frame type is not one this version knows.
  case unknownFrameType(UInt8)
  /// The payload is larger than its type allows.
  case payloadTooLarge(type: FrameType, size: Int, limit: Int)
  /// The payload ended before a field it must hold.
  case truncated(FrameType)
  /// The payload has bytes after its last field.
  case trailingBytes(FrameType)
  /// A field's value is not allowed (e.g. invalid UTF-8, a length over its cap).
  case invalidField(FrameType, String)
  /// The frame is valid but not allowed in the connection's current state.
  case unexpected(FrameType)

  /// A one-line explanation.
  public var description: String {
    switch self {
    case .lengthTooSmall(let length): return "malformed frame: length \(length) is below 5"
    case .unknownFrameType(let type): return "malformed frame: unknown frame type \(type)"
    case .payloadTooLarge(let type, let size, let limit):
      return "malformed frame: \(type) payload of \(size) bytes exceeds its limit of \(limit)"
    case .truncated(let type): return "malformed frame: \(type) payload is truncated"
    case .trailingBytes(let type): return "malformed frame: \(type) payload has trailing bytes"
    case .invalidField(let type, let field):
      return "malformed frame: \(type) has an invalid \(field)"
    case .unexpected(let type): return "protocol violation: unexpected \(type) frame"
    }
  }
}

extension Array where Element == UInt8 {
  /// Appends `text` as a u16 length and its UTF-8 bytes, truncated at a character boundary to at
  /// most `maximumBytes` so that encoding cannot fail.
  mutating func appendText(_ text: String, maximumBytes: Int) {
    var shown = Substring(text)
    while shown.utf8.count > maximumBytes { shown = shown.dropLast() }
    appendBigEndian(UInt16(shown.utf8.count))
    self += shown.utf8
  }

  mutating func appendBigEndian(_ value: UInt16) {
    append(UInt8(value >> 8))
    append(UInt8(value & 0xFF))
  }

  mutating func appendBigEndian(_ value: UInt32) {
    for shift in stride(from: 24, through: 0, by: -8) {
      append(UInt8((value >> UInt32(shift)) & 0xFF))
    }
  }

  mutating func appendBigEndian(_ value: UInt64) {
    for shift in stride(from: 56, through: 0, by: -8) {
      append(UInt8((value >> UInt64(shift)) & 0xFF))
    }
  }
}

extension RandomAccessCollection where Element == UInt8, Index == Int {
  func readBigEndianUInt32(at index: Int) -> UInt32 {
    (UInt32(self[index]) << 24) | (UInt32(self[index + 1]) << 16) | (UInt32(self[index + 2]) << 8)
      | UInt32(self[index + 3])
  }
}
