/// The timers of a Ferry connection.
public struct ConnectionTimeouts: Hashable, Sendable {
  /// From TCP accept (or connect) until the TLS handshake, both HELLOs and (on the advertiser)
  /// the INVITE, or (on the inviter) the advertiser's COMMIT and REVEAL, are done. A silent or
  /// garbage connection is dropped after this.
  public var handshake: Duration = .seconds(5)
  /// How often a connected link sends PING.
  public var heartbeatInterval: Duration = .seconds(2)
  /// A connected link that has received nothing for this long is dead.
  public var deadAfter: Duration = .seconds(7)
  /// An accepted offer whose peer makes no progress for this long is abandoned, on either end
  /// (``TransferError/stalled(_:)``): the receiver got no data, or the sender no credit and no
  /// acknowledgement. A sender waits this much longer than
  /// ``ResourceOffer/decisionTimeout`` for the offer's answer. Heartbeats only prove the link
  /// alive; this bounds a peer that keeps it alive and does nothing.
  public var transferStall: Duration = .seconds(60)

  /// The longest an invitation waits for an answer: an inviter's longer timeout is clamped to
  /// this on both ends, so that one connection cannot hold a prompt or a pending slot longer.
  public static let maximumInvitationTimeout: Duration = .seconds(120)

  /// The defaults: 5 s handshake, PING every 2 s, dead after 7 s of silence (so a vanished peer
  /// is noticed within 9 s), transfers abandoned after 60 s without progress.
  public init() {}

  /// Custom timers.
  public init(
    handshake: Duration, heartbeatInterval: Duration, deadAfter: Duration,
    transferStall: Duration = .seconds(60)
  ) {
    self.handshake = handshake
    self.heartbeatInterval = heartbeatInterval
    self.deadAfter = deadAfter
    self.transferStall = transferStall
  }
}

extension Duration {
  /// The duration as a NIO `TimeAmount`.
  var timeAmount: TimeAmountProxy { TimeAmountProxy(self) }
}

/// Converts a `Duration` to nanoseconds for NIO.
struct TimeAmountProxy {
  let nanoseconds: Int64

  init(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
  }
}
