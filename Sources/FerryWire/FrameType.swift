/// Every frame type of the protocol, with its payload cap (docs/PROTOCOL.md).
/// A frame of any other type closes the connection.
package enum FrameType: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
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
  /// The advertiser commits to its verification nonce (its SHA-256), before the INVITE.
  case commit = 0x09
  /// The advertiser reveals the verification nonce it committed to, after the INVITE.
  case reveal = 0x0A
  /// An application data message (channel 0).
  case message = 0x10
  /// Opens a named byte stream on the frame's channel.
  case streamOpen = 0x11
  /// Bytes of a stream.
  case streamData = 0x12
  /// The stream ended cleanly.
  case streamEnd = 0x13
  /// The channel (stream or transfer) is abandoned, by either side, with a reason.
  case reset = 0x14
  /// The receiver of a channel allows the sender that many more payload bytes on it.
  case credit = 0x15
  /// Offers files (a resource or a batch) on the frame's channel.
  case offer = 0x20
  /// Accepts an offer, with where each file resumes.
  case offerAccept = 0x21
  /// Bytes of one offered file.
  case chunk = 0x22
  /// One file is complete, with its digest.
  case fileEnd = 0x23
  /// The receiver's verdict on one file.
  case fileAck = 0x24
  /// The next bytes of one offered file are a hole: zeros, not sent (version 3).
  case hole = 0x25

  /// The largest payload the type may carry, in bytes.
  package var maximumPayloadSize: Int {
    switch self {
    case .hello: return 2 + 2 * 16 + 1 + 63
    case .invite: return 4 + ControlMessage.nonceSize + 4 + ControlMessage.maximumContextSize
    case .commit, .reveal: return ControlMessage.nonceSize
    case .accept, .cancel: return 0
    case .decline, .goodbye: return 1 + 2 + ControlMessage.maximumReasonSize
    case .ping, .pong: return 8
    case .message: return TransferMessage.maximumMessageSize
    case .streamOpen: return 2 + TransferMessage.maximumNameSize
    case .streamData: return TransferMessage.maximumChunkSize
    case .streamEnd: return 0
    case .reset: return 1 + 2 + ControlMessage.maximumReasonSize
    case .credit: return 4
    case .offer: return ResourceMessage.maximumOfferSize
    case .offerAccept: return 4 + 12 * ResourceMessage.maximumFiles + 4
    case .chunk: return 4 + TransferMessage.maximumChunkSize
    case .fileEnd: return 4 + 32
    case .fileAck: return 4 + 1 + 2 + ControlMessage.maximumReasonSize
    case .hole: return 4 + 8
    }
  }

  /// Whether frames of this type belong to the handshake and liveness (handled by the
  /// connection), rather than to a connected session's traffic.
  package var isControl: Bool { rawValue < 0x10 }

  /// The name used in docs/PROTOCOL.md, e.g. `HELLO`.
  package var description: String {
    switch self {
    case .hello: return "HELLO"
    case .invite: return "INVITE"
    case .accept: return "ACCEPT"
    case .decline: return "DECLINE"
    case .cancel: return "CANCEL"
    case .ping: return "PING"
    case .pong: return "PONG"
    case .goodbye: return "GOODBYE"
    case .commit: return "COMMIT"
    case .reveal: return "REVEAL"
    case .message: return "MESSAGE"
    case .streamOpen: return "STREAM_OPEN"
    case .streamData: return "STREAM_DATA"
    case .streamEnd: return "STREAM_END"
    case .reset: return "RESET"
    case .credit: return "CREDIT"
    case .offer: return "OFFER"
    case .offerAccept: return "OFFER_ACCEPT"
    case .chunk: return "CHUNK"
    case .hole: return "HOLE"
    case .fileEnd: return "FILE_END"
    case .fileAck: return "FILE_ACK"
    }
  }
}
