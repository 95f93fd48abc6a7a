import Ferry
import FerryAgent
import Foundation
import Synchronization

/// How a transfer's end and the receiver's outcome are shown: the summary line and `done`
/// event, the command's failure, and the words and JSON codes for them.
extension ReceiveReporter {
  /// Shows the end of `transfer`, with `error` (nil: every file settled): its `done` event and
  /// its summary line.
  func ended(_ transfer: IncomingTransfer, _ error: TransferError?) {
    guard let started = incoming.remove(transfer) else { return }
    bar.remove(transfer.peer.displayName)
    Self.done(transfer, error, output: output)
    let identical = incoming.takeIdentical(from: transfer.peer)
    let unshown = incoming.takeUnshown(from: transfer.peer)
    let unshownFailures = incoming.takeUnshownFailures(from: transfer.peer)
    // Failures past the first few, in one line.
    let failures =
      unshownFailures > 0
      ? " \(Quantity.count(unshownFailures, "more file")) from \(transfer.peer) were not "
        + "received (not listed above)."
      : ""
    if let error {
      note(Self.ending(of: transfer, error) + failures)
    } else {
      if !failures.isEmpty { note(String(failures.dropFirst())) }
      let already = identical > 0 ? "; \(identical) already there, not sent" : ""
      let listed = unshown > 0 ? "; \(unshown) more saved than listed above" : ""
      // The rate of what crossed: not of files already there, skipped or resumed.
      let timing = TransferSummary.timing(
        UInt64(transfer.progress.bytesCrossed), took: ContinuousClock.now - started)
      note(
        "Received \(TransferSummary.items(transfer.files.count, folders: transfer.folders)), "
          + "\(Quantity.bytes(UInt64(max(0, transfer.progress.totalBytes)))) from "
          + "\(transfer.peer)\(timing)"
          + "\(already)\(listed).")
    }
  }

  /// The command's failure for `outcome` (nil: success). With `--stdout`, a file received
  /// whole is written out now, and how that went is the outcome.
  func failure(_ outcome: ReceiveOutcome) -> CLIFailure? {
    switch outcome {
    case .received(let transfer):
      return transfer == nil ? nil : sink?.deliver()
    case .transferFailed(let peer, let error):
      return CLIFailure(
        status: .transferFailed,
        message: "not every file from \(peer) was received: \(error)", code: Self.code(error))
    case .refused(let peer, let error):
      return CLIFailure(
        status: .transferFailed, message: "refused the offer from \(peer): \(error)",
        code: .refused)
    case .refusedForSpace(let peer, let reason):
      return CLIFailure(
        status: .transferFailed, message: "refused the files from \(peer) (\(reason))",
        code: .refused)
    case .declined(let peer, let reason):
      return CLIFailure(
        status: .declined, message: "declined the offer from \(peer) (\(reason))",
        code: .declined)
    case .withdrawn:
      return CLIFailure(
        status: .transferFailed, message: "the sender withdrew its offer", code: .cancelled)
    case .neverStarted(let peer):
      return CLIFailure(
        status: .transferFailed, message: "\(peer) went away before its files came",
        code: .cancelled)
    case .didNotResume(let peer):
      return CLIFailure(
        status: .transferFailed, message: "\(peer) came back but did not resume its files",
        code: .peerDisconnected)
    case .incompleteBatch(let peer):
      return CLIFailure(
        status: .transferFailed,
        message: "\(peer) did not send the rest of the files it announced",
        code: .peerDisconnected)
    case .acceptFailed(let peer, let error):
      return CLIFailure(
        status: .transferFailed, message: "could not accept the text from \(peer): \(error)",
        code: .acceptFailed)
    }
  }

  /// The `done` event of `transfer`, ended with `error` (nil: every file settled).
  private static func done(
    _ transfer: IncomingTransfer, _ error: TransferError?, output: EventWriter
  ) {
    output.emit(
      ReceiveDone(
        peer: transfer.peer.displayName, files: transfer.files.count - transfer.folders,
        folders: transfer.folders,
        // Streamed files counted as what they came to.
        bytes: Int(transfer.progress.totalBytes), error: error?.description,
        code: error.map { code($0).rawValue }))
  }

  /// Reports `transfer`, cancelled by Ctrl-C (``IncomingTransfers/cancelAll()``), as ended: its
  /// `done` event (code `cancelled`) and a line, before the process exits 130.
  /// `kept`: what arrived stays staged for a resume (not so with `--stdout`'s private folder).
  static func interrupted(_ transfer: IncomingTransfer, output: EventWriter, kept: Bool) {
    done(transfer, .cancelled, output: output)
    output.note(
      "Stopped receiving from \(transfer.peer)"
        + (kept
          ? "; \(keptWords(transfer))."
          : "."))
  }

  /// What the person reads when a transfer from `transfer`'s sender ends with `error`: a
  /// cancel said as whose it was, and for a cancel or a lost link, that what arrived is kept
  /// for the sender to resume (but for files sent as they were read, which never resume).
  static func ending(of transfer: IncomingTransfer, _ error: TransferError) -> String {
    let kept = keptWords(transfer)
    switch error {
    case .cancelledByPeer(let reason):
      let said = reason.isEmpty ? "" : " (\(DisplayText.escaping(reason)))"
      return "\(transfer.peer) stopped sending\(said); \(kept)."
    case _ where RetryPolicy.isRetryable(error):
      return "Transfer from \(transfer.peer) ended: \(error); \(kept)."
    default:
      return "Transfer from \(transfer.peer) ended: \(error)."
    }
  }

  /// What stays of `transfer` when it ends early: what arrived, staged for a resume — but
  /// nothing of a file sent as it was read (standard input), or of a LocalSend sender's files,
  /// which cannot resume.
  static func keptWords(_ transfer: IncomingTransfer) -> String {
    guard transfer.resumable else {
      return "it came by LocalSend or a web page, which cannot resume: sending the files again "
        + "starts them over"
    }
    let kept = "what arrived is kept in the staging folder: sending the same files again resumes"
    if transfer.streamed.isEmpty { return kept }
    if transfer.streamed.count == transfer.files.count {
      return "nothing of it is kept: it was sent as it was read, and cannot resume"
    }
    return kept + " (but for what was sent as it was read)"
  }

  /// The stable JSON code of a failed file.
  static func code(_ error: TransferError) -> ErrorCode {
    switch error {
    case .cancelled, .cancelledByPeer: return .cancelled
    case .peerDisconnected: return .peerDisconnected
    case .stalled: return .stalled
    case .resource(.integrityCheckFailed): return .integrity
    case .resource(.unsafePath): return .invalidPath
    case .resource(.insufficientSpace): return .noSpace
    case .resource(.unsafeDestination): return .unsafeDestination
    default: return .transferFailed
    }
  }
}
