internal import FerryWire

/// The connection once TLS is up, until HELLO (``ConnectionStateMachine/State/awaitingHello(_:)``).
extension ConnectionStateMachine {
  /// TLS is up: who proved its key, and the session's exporter value for the code.
  struct Greeting: Hashable {
    let fingerprint: Fingerprint
    let keyingMaterial: [UInt8]

    /// What the peer's HELLO leads to.
    enum Hello: Hashable {
      /// The peer is known, at the version agreed.
      case known(Known)
      /// No version both ends speak (none at or above the per-connection code's).
      case noCommonVersion
      /// The display name is not one.
      case invalidName
    }

    /// TLS completed, on `role`'s end, with a peer proving `fingerprint` (nil: it presented no
    /// usable certificate), having agreed on `alpn` (nil: none), with `keyingMaterial` the
    /// session's exporter value for the verification code (nil: none could be derived): the
    /// greeting, or why the peer is refused.
    static func tlsCompleted(
      role: Role, peer fingerprint: Fingerprint?, alpn: String?, keyingMaterial: [UInt8]?
    ) -> Result<Greeting, InvitationError> {
      // The inviter offered ALPN ferry/1 and a Ferry advertiser always selects it; a TLS server
      // that ignores ALPN (a web server, openssl s_server) is refused now rather than waited on
      // for a HELLO that never comes. (An advertiser still admits clients that offer no ALPN,
      // such as openssl s_client: HELLO tells it what they speak.)
      if case .inviter = role, alpn != WireProtocol.alpn {
        return .failure(
          .authenticationFailed(
            reason: "the other end speaks TLS but not Ferry's protocol "
              + "(no agreement on ALPN '\(WireProtocol.alpn)')"))
      }
      guard let fingerprint else {
        return .failure(.authenticationFailed(reason: "the peer presented no certificate"))
      }
      // Without it there is no code to compare: nothing would tell a man in the middle apart.
      guard let keyingMaterial, !keyingMaterial.isEmpty else {
        return .failure(
          .authenticationFailed(
            reason: "the TLS session gave no keying material for the verification code"))
      }
      return .success(Greeting(fingerprint: fingerprint, keyingMaterial: keyingMaterial))
    }

    /// The peer's HELLO offered `versions` and named it `name`.
    func hello(versions: [UInt16], name: String) -> Hello {
      guard
        let agreed = WireProtocol.negotiate(ours: WireProtocol.supportedVersions, theirs: versions)
      else {
        return .noCommonVersion
      }
      // Never below the version of the per-connection code, whatever this build lists: a peer
      // that could settle for an older version would let a man in the middle avoid the code.
      guard agreed >= WireProtocol.verificationNonceVersion else { return .noCommonVersion }
      guard let peer = try? PeerID(displayName: name, fingerprint: fingerprint) else {
        return .invalidName
      }
      return .known(Known(peer: peer, version: agreed, keyingMaterial: keyingMaterial))
    }
  }
}
