internal import FerryWire

/// Why an invitation did not produce a connected peer. Each failure a user must tell apart has
/// its own case.
public enum InvitationError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No answer within the invitation's timeout.
  case timedOut
  /// The advertiser declined, with its reason (empty if none was given).
  case declined(reason: String)
  /// The advertiser has too many invitations pending.
  case busy
  /// A session holds at most ``Session/maximumPeers`` peers (including itself).
  case sessionFull
  /// No connection could be made to any of the peer's addresses. `address` is the last one
  /// tried (`host:port`, an IPv6 host in brackets; empty if the peer has no address), `reason`
  /// why it failed in words ("connection refused", "the name could not be resolved").
  case unreachable(address: String, reason: String)
  /// The TLS handshake failed: the certificate did not match the expected fingerprint, or the
  /// peer refused ours.
  case authenticationFailed(reason: String)
  /// The peer speaks no protocol version this build speaks; `peerVersions` are its versions.
  case protocolVersionUnsupported(peerVersions: [UInt16])
  /// The context is larger than ``ProtocolLimits/maximumContextSize``.
  case contextTooLarge(byteCount: Int)
  /// The invitation is no longer pending: the inviter withdrew it or timed out, or it was
  /// already answered.
  case expired
  /// The connection broke during the handshake, or the peer gave up on it for lack of time
  /// (worth trying again).
  case connectionFailed(reason: String)
  /// The peer closed the connection on purpose (GOODBYE) before answering: it is shutting down
  /// or was told to stop. Not worth trying again at once.
  case closedByPeer(reason: String)
  /// The peer broke the protocol during the handshake, or said this end did; `reason` says
  /// what. Trying again would break it again.
  case protocolViolation(reason: String)
  /// The task waiting for the answer was cancelled (the invitation was withdrawn), or the
  /// session was closed.
  case cancelled

  /// A message for users.
  public var description: String {
    switch self {
    case .timedOut: return "the invitation timed out without an answer"
    case .declined(let reason):
      return reason.isEmpty
        ? "the invitation was declined"
        : "the invitation was declined: \(DisplayText.escaping(reason))"
    case .busy: return "the peer is busy: too many invitations are pending there"
    case .sessionFull:
      return "the session is full (at most \(SessionLimits.maximumPeers) peers, including this one)"
    case .unreachable(let address, let reason):
      return address.isEmpty
        ? "the peer is unreachable: \(reason)" : "\(address) is unreachable: \(reason)"
    case .authenticationFailed(let reason): return "authentication failed: \(reason)"
    case .protocolVersionUnsupported(let versions):
      return
        "the peer speaks protocol version(s) \(versions.map(String.init).joined(separator: ", ")); "
        + "this build speaks \(WireProtocol.supportedVersions.map(String.init).joined(separator: ", "))"
    case .contextTooLarge(let count):
      return
        "the invitation context is \(count) bytes; the limit is \(ControlMessage.maximumContextSize)"
    case .expired:
      return "the invitation is no longer pending (the inviter gave up or it was answered)"
    case .connectionFailed(let reason): return "the connection failed: \(reason)"
    case .closedByPeer(let reason): return reason
    case .protocolViolation(let reason): return "protocol violation: \(reason)"
    case .cancelled: return "the invitation was cancelled"
    }
  }
}
