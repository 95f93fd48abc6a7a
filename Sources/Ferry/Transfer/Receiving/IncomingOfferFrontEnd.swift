import FerryWire

/// What an incoming offer says to its sender, in the sender's protocol: the front end's side
/// of ``IncomingOffer``. The Ferry wire says it in frames on the offer's channel
/// (``FerryOfferAnswers``); another protocol in its own terms. Called on the offer's executor,
/// in order; an implementation hands the words on without waiting.
package protocol IncomingOfferFrontEnd: Sendable {
  /// The offer is accepted: where each file starts (``ResourceMessage/skip``: left out), and
  /// which files are held (their digest is to come first).
  func accept(offsets: [UInt64], held: [Int])
  /// Verdicts on files, in one go.
  func acknowledge(_ acks: [FileAck])
  /// The sender may send `bytes` more.
  func grant(_ bytes: Int)
  /// The offer ends: `code`, with `reason` (words for the sender, naming nothing of this
  /// machine's files); `cause` says why, for a protocol that has its own words for it.
  func reset(_ code: TransferMessage.ResetCode, reason: String, cause: OfferEnd)
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
  package let index: Int
  package let status: ResourceMessage.FileStatus
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
