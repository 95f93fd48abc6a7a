/// A connected link (``ConnectionStateMachine/State/connected(_:)``).
extension ConnectionStateMachine {
  /// A connected link.
  struct Connected: Hashable {
    let peer: PeerID
    let version: UInt16
    let code: VerificationCode
    /// PINGs sent: each carries the next number.
    var pings: UInt64 = 0

    /// The inviter's link, once ACCEPT came; nil if REVEAL never gave the code.
    init?(_ previous: Asked) {
      guard let code = previous.code else { return nil }
      peer = previous.known.peer
      version = previous.known.version
      self.code = code
    }

    /// The advertiser's link, once its application accepted.
    init(_ previous: Pending) {
      peer = previous.known.peer
      version = previous.known.version
      code = previous.code
    }

    /// Another PING goes out: its number.
    mutating func ping() -> UInt64 {
      pings &+= 1
      return pings
    }
  }
}
