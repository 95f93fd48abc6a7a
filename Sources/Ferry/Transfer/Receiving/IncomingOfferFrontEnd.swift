/// What an incoming offer says to its sender, in the sender's protocol: the front end's side
/// of ``IncomingOffer``. The Ferry wire says it in frames on the offer's channel
/// (``FerryOfferAnswers``); another protocol in its own terms. Called on the offer's executor,
/// in order; an implementation hands the words on without waiting.
package protocol IncomingOfferFrontEnd: Sendable {
  /// The offer is accepted: where each file starts — left out, from an offset, or held (its
  /// digest is to come first) — one ``FileStart`` per file, in the offer's order.
  func accept(_ starts: [FileStart])
  /// Verdicts on files, in one go.
  func acknowledge(_ acks: [FileAck])
  /// The sender may send `bytes` more.
  func grant(_ bytes: Int)
  /// The offer ends, with `reason` (words for the sender, naming nothing of this machine's
  /// files); `cause` says why, in the core's terms: each protocol says it in its own (the Ferry
  /// wire as a RESET's code).
  func reset(reason: String, cause: OfferEnd)
  /// The application cancelled: said at once, ahead of anything said after this call (the
  /// session's GOODBYE), so that the sender hears of a cancel rather than of a vanished
  /// receiver; nothing more of the offer is taken.
  func cancel(reason: String)
  /// The offer is done with: `acks` (the last verdicts) go first, then `then` runs — once they
  /// are on their way, so that an application may exit on the event it reports.
  func close(after acks: [FileAck], then: @escaping @Sendable () -> Void)
}

/// One file's verdict, for the sender.
package struct FileAck: Hashable, Sendable {
  /// The file's index in the offer.
  package let index: Int
  /// The verdict.
  package let status: FileVerdict
  /// Why, for a verdict that is not `stored` (words for the sender; often empty).
  package let reason: String
}

/// Why an incoming offer ends before its last file, for a front end to say in its protocol.
package enum OfferEnd: Sendable {
  /// The application (or the person) declined it.
  case declined
  /// Refused before anything was written (an unsafe path, no room, too many files).
  case refused(ResourceError)
  /// Stopped after it was accepted.
  case stopped(TransferError)
}
