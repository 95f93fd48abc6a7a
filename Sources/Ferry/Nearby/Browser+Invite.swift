extension Browser {
  /// Invites a discovered peer into `session`: connects to its addresses in turn, checks inside
  /// the TLS handshake that its certificate matches the `fp` it advertised, and waits for the
  /// answer.
  ///
  /// - Parameters:
  ///   - peer: A peer this browser reported.
  ///   - session: The session the peer joins.
  ///   - context: Up to 64 KiB the advertiser sees with the invitation.
  ///   - timeout: How long to wait for the answer, connecting included (default 30 s, as in
  ///     MultipeerConnectivity).
  ///   - onVerificationCode: Called with the peer and the connection's verification code as
  ///     soon as the advertiser is asked — before its answer, whether it accepts or declines —
  ///     for the user to compare with the advertiser's screen; once per connection tried. On a
  ///     NIO event loop: return quickly.
  /// - Returns: The connected peer.
  /// - Throws: ``InvitationError``; `.authenticationFailed` also when the peer advertises no
  ///   fingerprint.
  public func invite(
    _ peer: DiscoveredPeer, to session: Session, context: [UInt8] = [],
    timeout: Duration = .seconds(30),
    onVerificationCode: (@Sendable (PeerID, VerificationCode) -> Void)? = nil
  ) async throws(InvitationError) -> PeerID {
    guard let fingerprint = peer.info.fingerprint else {
      throw .authenticationFailed(reason: "\(peer.name) advertises no fingerprint")
    }
    return try await session.connector.invite(
      endpoints: peer.addresses.map { ($0.ip, Int(peer.port)) }, expecting: .exact(fingerprint),
      context: context, timeout: timeout, onVerificationCode: onVerificationCode, into: session)
  }
}
