/// Every frame type of protocol version 1, with its payload cap (docs/PROTOCOL.md).
/// A frame of any other type closes the connection.
public enum FrameType: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
  /// Versions and display name; the first frame each side sends.
  case hello = 0x01
  /// The inviter asks to join the advertiser's session, with a context.
  case invite = 0x02
  /// The advertiser accepts the invitation.
  case accept = 0x03
  /// The advertiser declines (or is busy), with a reason.
  case decline = 0x04
  /// The inviter withdraws its invitation (it timed out or gave up).
  case cancel = 0x05
  /// Liveness probe.
  case ping = 0x06
  /// Answer to a ping.
  case pong = 0x07
  /// The sender is closing the connection, with a reason.
  case goodbye = 0x08

  /// The largest payload the type may carry, in bytes.
  public var maximumPayloadSize: Int {
    switch self {
    case .hello: return 2 + 2 * 16 + 1 + 63
    case .invite: return 4 + 4 + ControlMessage.maximumContextSize
    case .accept, .cancel: return 0
    case .decline, .goodbye: return 1 + 2 + ControlMessage.maximumReasonSize
    case .ping, .pong: return 8
    }
  }

  /// The name used in docs/PROTOCOL.md, e.g. `HELLO`.
  public var description: String {
    switch self {
    case .hello: return "HELLO"
    case .invite: return "INVITE"
    case .accept: return "ACCEPT"
    case .decline: return "DECLINE"
    case .cancel: return "CANCEL"
    case .ping: return "PING"
    case .pong: return "PONG"
    case .goodbye: return "GOODBYE"
    }
  }
}
