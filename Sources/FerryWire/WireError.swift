/// Why bytes received are not valid Ferry protocol.
package enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
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
  package var description: String {
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
