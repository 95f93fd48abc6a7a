/// Why a message, stream or resource did not get through.
public enum TransferError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The peer is not connected to this session.
  case notConnected(PeerID)
  /// The message is larger than ``ProtocolLimits/maximumMessageSize``.
  case messageTooLarge(byteCount: Int)
  /// The stream name is empty or longer than ``ProtocolLimits/maximumStreamNameSize`` bytes.
  case invalidStreamName(String)
  /// The link to the peer ended before the transfer completed.
  case peerDisconnected(reason: String)
  /// The peer made no progress on the transfer for this long (no data, no answer, no
  /// acknowledgement: ``ConnectionTimeouts/transferStall``), though its link is alive.
  case stalled(Duration)
  /// This side cancelled the transfer.
  case cancelled
  /// The peer cancelled or refused the transfer, with its reason.
  case cancelledByPeer(reason: String)
  /// The stream was already finished or cancelled.
  case streamClosed
  /// A file could not be sent, received or placed.
  case resource(ResourceError)

  /// A message for users.
  public var description: String {
    switch self {
    case .notConnected(let peer): return "\(peer) is not connected"
    case .messageTooLarge(let count):
      return "the message is \(count) bytes; the limit is \(ProtocolLimits.maximumMessageSize)"
    case .invalidStreamName(let name):
      return
        "invalid stream name \"\(escaped(name, keepingUnicode: true))\": 1 to \(ProtocolLimits.maximumStreamNameSize) bytes of UTF-8"
    case .peerDisconnected(let reason): return "the peer disconnected: \(reason)"
    case .stalled(let duration):
      return "the peer made no progress for \(duration.components.seconds) s"
    case .cancelled: return "the transfer was cancelled"
    case .cancelledByPeer(let reason):
      return reason.isEmpty
        ? "the peer cancelled the transfer"
        : "the peer cancelled the transfer: \(DisplayText.escaping(reason))"
    case .streamClosed: return "the stream is already finished or cancelled"
    case .resource(let error): return error.description
    }
  }
}
