import Dispatch
import NIOCore
import NIOPosix
import Synchronization

/// Inviting a peer by address, and as MultipeerConnectivity does (the ``SessionConnector``
/// connects).
extension Session {
  /// Invites the peer listening at `host:port` directly, without discovery.
  ///
  /// - Parameters:
  ///   - host: An IP address or host name.
  ///   - port: The advertiser's port.
  ///   - expecting: The fingerprint the peer must present; nil accepts any certificate (the
  ///     returned peer's fingerprint and the verification code must then be checked by the
  ///     user).
  ///   - context: Up to 64 KiB the advertiser sees with the invitation.
  ///   - timeout: How long to wait for the answer, connecting included (default 30 s).
  ///   - onVerificationCode: Called with the peer and the connection's verification code as
  ///     soon as the advertiser is asked — before its answer, whether it accepts or declines —
  ///     for the user to compare with the advertiser's screen; once per connection tried. On a
  ///     NIO event loop: return quickly.
  /// - Returns: The connected peer.
  /// - Throws: ``InvitationError``: `.timedOut`, `.declined`, `.busy`, `.sessionFull`,
  ///   `.unreachable`, `.authenticationFailed`, `.protocolVersionUnsupported`,
  ///   `.contextTooLarge`, `.connectionFailed` (retried by ``RetryPolicy``), `.closedByPeer`,
  ///   `.protocolViolation` or `.cancelled`.
  public func invite(
    host: String, port: UInt16, expecting: Fingerprint? = nil, context: [UInt8] = [],
    timeout: Duration = .seconds(30),
    onVerificationCode: (@Sendable (PeerID, VerificationCode) -> Void)? = nil
  ) async throws(InvitationError) -> PeerID {
    try await connector.invite(
      endpoints: [(host, Int(port))], expecting: expecting.map { .exact($0) }, context: context,
      timeout: timeout, onVerificationCode: onVerificationCode, into: self)
  }

  /// Invites the peer listening at `host:port` directly, requiring that its fingerprint start
  /// with `fingerprintPrefix` (hexadecimal; spaces and colons ignored). The check happens inside
  /// the TLS handshake, so a peer with another key never sees the invitation.
  ///
  /// - Throws: ``InvitationError``, as
  ///   ``invite(host:port:expecting:context:timeout:onVerificationCode:)``;
  ///   `.authenticationFailed` when the fingerprint does not start with the prefix, or before
  ///   connecting when the prefix is not hexadecimal or has fewer than
  ///   ``Fingerprint/minimumPrefixDigits`` digits (a key with a shorter given prefix can be
  ///   made on purpose: such a prefix does not stand for a key).
  public func invite(
    host: String, port: UInt16, fingerprintPrefix: String, context: [UInt8] = [],
    timeout: Duration = .seconds(30),
    onVerificationCode: (@Sendable (PeerID, VerificationCode) -> Void)? = nil
  ) async throws(InvitationError) -> PeerID {
    guard let digits = Fingerprint.prefixLength(of: fingerprintPrefix),
      digits >= Fingerprint.minimumPrefixDigits
    else {
      throw .authenticationFailed(
        reason: "a fingerprint prefix needs \(Fingerprint.minimumPrefixDigits) to 64 hex digits")
    }
    return try await connector.invite(
      endpoints: [(host, Int(port))], expecting: .prefix(fingerprintPrefix), context: context,
      timeout: timeout, onVerificationCode: onVerificationCode, into: self)
  }

  /// Invites the peer with `fingerprint` at one of `endpoints`, as MultipeerConnectivity does:
  /// a peer connected already is returned at once and keeps its link. An endpoint that cannot
  /// be reached is followed by the next, all within `timeout` (one invitation under way for
  /// the crossing rule of `adopt`, however many endpoints are tried).
  ///
  /// - Throws: as ``invite(host:port:expecting:context:timeout:onVerificationCode:)``.
  package func inviteKeepingConnected(
    endpoints: [(host: String, port: Int)], expecting fingerprint: Fingerprint,
    context: [UInt8] = [], timeout: Duration
  ) async throws(InvitationError) -> PeerID {
    try await connector.invite(
      endpoints: endpoints, expecting: .exact(fingerprint), context: context, timeout: timeout,
      keepingConnected: true, onVerificationCode: nil, into: self)
  }
}
