/// When an accepted offer's FILE_ACKs go to the sender (``IncomingOfferStateMachine``).
extension IncomingOfferStateMachine {
  /// The FILE_ACKs of an accepted offer gathered and not sent yet, and when they go: at once
  /// for a front end whose sender waits for each file's answer, after
  /// ``IncomingOfferStateMachine/ackBatch`` of them, or a moment after the first (the offer's
  /// end sends them too). Pure: the machine performs what it says.
  struct AckGathering: Sendable {
    /// What to do once a FILE_ACK is gathered.
    enum Next: Hashable, Sendable {
      /// Send the FILE_ACKs gathered now (``IncomingOfferStateMachine/flushAcks(into:)``).
      case flush
      /// The first one gathered: send them in a moment
      /// (``IncomingOfferAction/scheduleAckFlush``).
      case scheduleFlush
      /// Gather more first.
      case gather
    }

    /// FILE_ACKs gathered and not sent.
    private(set) var gathered = 0

    /// One more FILE_ACK is gathered (`atOnce`: each verdict goes to the sender at once): what
    /// to do now, unless the offer ends with it.
    mutating func queued(atOnce: Bool) -> Next {
      gathered += 1
      if atOnce || gathered >= IncomingOfferStateMachine.ackBatch { return .flush }
      // The sender only waits for acks at its end; gather them for a moment.
      if gathered == 1 { return .scheduleFlush }
      return .gather
    }

    /// The FILE_ACKs gathered are sent: false (and nothing changes) when there are none.
    mutating func flush() -> Bool {
      guard gathered > 0 else { return false }
      gathered = 0
      return true
    }
  }
}
