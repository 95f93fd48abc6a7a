internal import FerryWire

/// The connection state machine's states, actions and what they carry; each state's data, and
/// its transitions, is a struct of its own in States/ (``Greeting``, ``Known``, ``Asked``,
/// ``Pending``, ``Connected``, ``Closed``).
extension ConnectionStateMachine {
  /// Which end of the invitation this is.
  enum Role: Hashable {
    /// Sends INVITE with `context` after HELLO and waits at most `timeout` for the answer.
    case inviter(context: [UInt8], timeout: Duration)
    /// Reports the INVITE and waits for the application's answer.
    case advertiser
  }

  /// Where the connection is. Each state carries what is valid in it: the peer once HELLO
  /// named it, the agreed version, the keying material until the code is derived, the
  /// commitment until REVEAL, the code once known, the PING count while connected, and why it
  /// ended once it did.
  enum State: Hashable {
    /// TLS is being negotiated.
    case tlsHandshake
    /// TLS is up with a peer proving this key; its HELLO is awaited.
    case awaitingHello(Greeting)
    /// The inviter knows the peer and waits for its COMMIT before sending INVITE.
    case awaitingCommit(Known)
    /// The advertiser knows the peer, sent its COMMIT and waits for the INVITE.
    case awaitingInvite(Known)
    /// The inviter sent INVITE and waits for REVEAL, then ACCEPT or DECLINE.
    case awaitingAnswer(Asked)
    /// The advertiser's application has the invitation and has not answered.
    case pendingDecision(Pending)
    /// The link is up: session frames flow, heartbeats run.
    case connected(Connected)
    /// Over, for this reason; nothing more is done (the channel is closing or closed).
    case closed(Closed)
  }

  /// What the handler must do, in order.
  enum Action: Hashable {
    /// Write and flush this control message.
    case send(ControlMessage)
    /// Close the channel.
    case close
    /// Cancel the handshake deadline or the invitation's expiry.
    case cancelDeadline
    /// Expire the pending invitation after this long (``invitationExpired()``).
    case scheduleExpiry(Duration)
    /// Start sending PINGs and watching for silence (``heartbeat(silentFor:)``).
    case startHeartbeat
    /// Stop the heartbeat.
    case stopHeartbeat
    /// The link is connected: session frames may now be read (``LinkBudget/connected``).
    case markConnected
    /// Pass the session frame on to the multiplexer.
    case forward
    /// Answer a PING with this PONG, if the peer reads its replies (else ``violation(_:)``).
    case pong(UInt64)
    /// The inviter learned who the advertiser is (before the answer).
    case peerKnown(PeerID)
    /// The inviter learned the verification code (on REVEAL, before the answer).
    case verificationCode(VerificationCode)
    /// The advertiser received an invitation, for the application.
    case invite(IncomingInvite)
    /// Complete the inviter's answer.
    case answer(Result<PeerID, InvitationError>)
    /// The pending invitation was withdrawn or expired before an answer.
    case invitationWithdrawn
    /// The connected link ended, for this reason.
    case linkEnded(LinkEnd)
  }

  /// What the advertiser learns from an INVITE.
  struct IncomingInvite: Hashable {
    let peer: PeerID
    let context: [UInt8]
    let timeout: Duration
    /// When the inviter stops waiting, as this end counts: from the INVITE's arrival, not from
    /// when the application is handed it (on a loaded machine, seconds later).
    let expiresAt: ContinuousClock.Instant
    /// The code of this connection, which the inviter can show once REVEAL (``reveal()``, when
    /// the invitation is admitted, before the application is asked) reaches it.
    let verificationCode: VerificationCode
  }

  /// How a channel error is classified by the handler, which alone can read NIO's errors.
  enum ChannelError: Hashable {
    /// A frame that could not be decoded.
    case wire(WireError)
    /// TLS failed during its handshake, for this reason.
    case tlsHandshake(String)
    /// The connection broke (closed or reset) during the TLS handshake: the network, not a
    /// refusal.
    case tlsHandshakeInterrupted(String)
    /// The peer closed TCP without a TLS close.
    case uncleanShutdown
    /// Anything else.
    case other(String)
  }
}
