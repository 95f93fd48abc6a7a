/// How long the sender of an accepted offer has made no progress (``IncomingOfferStateMachine``).
extension IncomingOfferStateMachine {
  /// When the sender of an accepted offer last made progress, and the file data it sent since:
  /// a sender heard of nothing for the whole stall limit loses the offer. Pure: the time comes
  /// with each event.
  struct StallClock: Sendable {
    /// When the sender last made progress — a file ended, or
    /// ``IncomingOfferStateMachine/progressBytes`` of file data since the time before — or this
    /// side last finished hashing a held file.
    private(set) var lastHeard: ContinuousClock.Instant
    /// Bytes of file data since ``lastHeard``: a trickle never adds up to progress.
    private(set) var sinceHeard: UInt64 = 0

    /// A clock that last heard from the sender at `lastHeard` (the offer was accepted).
    init(lastHeard: ContinuousClock.Instant) {
      self.lastHeard = lastHeard
    }

    /// `bytes` of file data came at `now` (for a streamed file: `streamed`).
    mutating func heard(bytes: UInt64, streamed: Bool, now: ContinuousClock.Instant) {
      // Progress is bytes, not frames: enough of them, or a streamed file's as they come.
      sinceHeard &+= bytes
      if streamed || sinceHeard >= IncomingOfferStateMachine.progressBytes {
        lastHeard = now
        sinceHeard = 0
      }
    }

    /// Progress at `now` whatever the bytes since (a file ended; this side finished hashing a
    /// held file, or left its hash): the silence counts from here again.
    mutating func heard(now: ContinuousClock.Instant) {
      lastHeard = now
    }

    /// Whether the sender has made no progress for `limit` at `now`.
    func stalled(now: ContinuousClock.Instant, limit: Duration) -> Bool {
      now - lastHeard >= limit
    }
  }
}
