/// The session traffic of protocol version 1 (docs/PROTOCOL.md, "Session frames"): data
/// messages, streams and flow control. Only valid on a connected link. Pure like
/// ``ControlMessage``; bulk payloads are decoded by the session's NIO handlers without copying,
/// using the same layouts.
package enum TransferMessage: Hashable, Sendable {
  /// An application message (channel 0).
  case message([UInt8])
  /// Opens stream `channel` named `name`.
  case streamOpen(channel: UInt32, name: String)
  /// Bytes of stream `channel`.
  case streamData(channel: UInt32, bytes: [UInt8])
  /// Stream `channel` ended cleanly.
  case streamEnd(channel: UInt32)
  /// Channel `channel` is abandoned.
  case reset(channel: UInt32, ResetCode, reason: String)
  /// The receiver of channel `channel` (0: data messages) allows `bytes` more payload bytes.
  case credit(channel: UInt32, bytes: UInt32)

  /// The largest data message, in bytes (1 MiB).
  package static let maximumMessageSize = 1 << 20
  /// The largest stream chunk, in bytes (256 KiB).
  package static let maximumChunkSize = 256 << 10
  /// The longest stream name, in UTF-8 bytes.
  package static let maximumNameSize = 1024
  /// The payload bytes a receiver allows on a channel before any CREDIT: 4 MiB for data messages
  /// (channel 0), 1 MiB for each stream.
  package static func initialWindow(channel: UInt32) -> Int {
    channel == 0 ? 4 << 20 : 1 << 20
  }

  /// Why a channel was reset.
  package enum ResetCode: UInt8, Hashable, Sendable {
    /// The application cancelled it.
    case cancelled = 0
    /// The receiver could not handle it (e.g. a protocol error on the channel).
    case refused = 1
    /// The sender failed (e.g. it could not read its source).
    case failed = 2
  }

  /// The message as a frame.
  package var frame: Frame {
    var payload: [UInt8] = []
    switch self {
    case .message(let bytes):
      return Frame(type: .message, channel: 0, payload: bytes)
    case .streamOpen(let channel, let name):
      payload.appendText(name, maximumBytes: Self.maximumNameSize)
      return Frame(type: .streamOpen, channel: channel, payload: payload)
    case .streamData(let channel, let bytes):
      return Frame(type: .streamData, channel: channel, payload: bytes)
    case .streamEnd(let channel):
      return Frame(type: .streamEnd, channel: channel)
    case .reset(let channel, let code, let reason):
      payload.append(code.rawValue)
      payload.appendText(reason, maximumBytes: ControlMessage.maximumReasonSize)
      return Frame(type: .reset, channel: channel, payload: payload)
    case .credit(let channel, let bytes):
      payload.appendBigEndian(bytes)
      return Frame(type: .credit, channel: channel, payload: payload)
    }
  }

  /// Decodes a session frame.
  ///
  /// - Throws: ``WireError`` for a control frame, a stream frame on channel 0 (or a message off
  ///   it), a truncated or over-long field, invalid UTF-8, an unknown reset code, a zero credit,
  ///   or trailing bytes.
  package init(frame: Frame) throws(WireError) {
    let type = frame.type
    var reader = ByteReader(frame.payload, type: type)
    switch type {
    case .message:
      guard frame.channel == 0 else { throw .invalidField(type, "channel \(frame.channel)") }
      self = .message(frame.payload)
      return
    case .streamOpen, .streamData, .streamEnd:
      guard frame.channel != 0 else { throw .invalidField(type, "channel 0") }
      switch type {
      case .streamOpen:
        let length = Int(try reader.uint16())
        guard (1...Self.maximumNameSize).contains(length) else {
          throw .invalidField(type, "name length \(length)")
        }
        self = .streamOpen(
          channel: frame.channel, name: try reader.utf8(count: length, field: "name"))
      case .streamData:
        self = .streamData(channel: frame.channel, bytes: frame.payload)
        return
      default:
        self = .streamEnd(channel: frame.channel)
      }
    case .reset:
      let raw = try reader.uint8()
      guard let code = ResetCode(rawValue: raw) else { throw .invalidField(type, "code \(raw)") }
      self = .reset(channel: frame.channel, code, reason: try reader.reason())
    case .credit:
      let bytes = try reader.uint32()
      guard bytes > 0 else { throw .invalidField(type, "zero credit") }
      self = .credit(channel: frame.channel, bytes: bytes)
    default:
      throw .unexpected(type)
    }
    try reader.finish()
  }
}
