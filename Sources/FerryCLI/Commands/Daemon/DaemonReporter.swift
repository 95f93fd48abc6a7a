import FerryAgent
import FerryDaemon

/// What `ferry daemon` says of its outbox and of its questions: the `queued`, `delivering`,
/// `send-ended`, `outbox-problem` and `asking` events (into the API's event stream), and lines
/// for its log.
enum DaemonReporter {
  /// Reports what happened to a send.
  static func report(_ event: Outbox.Event, to output: EventWriter) {
    switch event {
    case .queued(let entry):
      output.emit(SendQueued(entry))
      output.note("Queued \(entry.id) for \(printable(entry.to)).")
    case .delivering(let entry):
      output.emit(SendDelivering(entry))
      output.note("Delivering \(entry.id) to \(printable(entry.to)) (attempt \(entry.attempts)).")
    case .ended(let entry):
      output.emit(SendEnded(entry))
      output.note("Send \(entry.id) to \(printable(entry.to)): \(entry.state.word).")
    case .corrupt(let path, let reason):
      output.emit(OutboxProblem(send: nil, path: path, reason: reason))
      output.note("The outbox held a file that is not a send (\(reason)): moved to \(path).")
    case .unwritable(let id, let reason):
      output.emit(OutboxProblem(send: id, path: nil, reason: reason))
      output.note("The outbox could not write \(id): \(reason).")
    }
  }

  /// Reports a change in the peers around (for readers following the events only: the
  /// page asks GET /v1/peers again).
  static func report(_ change: Courier.AroundChange, to output: EventWriter) {
    output.emit(
      AroundChanged(
        change: change.found ? "found" : "lost", name: change.name,
        fingerprint: change.fingerprint, protocol: change.protocolName))
  }

  /// Reports a question waiting for a person.
  static func report(_ change: OpenOffers.Change, to output: EventWriter) {
    guard case .asked(let question) = change else { return }
    output.emit(
      QuestionAsked(
        question: question.id, peer: question.offer.sender.name, kind: question.offer.kind.rawValue,
        expires: EventWriter.timestamp(question.offer.expires)))
    output.note(
      "\(printable(question.offer.sender.name)) asks to send: ferry accept \(question.id) "
        + "or ferry decline \(question.id).")
  }
}
