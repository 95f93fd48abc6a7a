import Ferry
import Foundation
import Synchronization

/// Turns a session's resource events into what `ferry receive` shows: a progress bar per
/// sender, `progress` / `file-done` / `done` / `refused` events, where each file was saved, and
/// — for `--once` — the one offer's outcome (nil: every file stored, skipped or identical).
struct ReceiveReporter: Sendable {
  let output: EventWriter
  let bar: ProgressBar
  let incoming: IncomingTransfers
  let gate: OnceGate?
  let outcomes: AsyncStream<CLIFailure?>.Continuation
  /// Where each approved batch stands: ended, or lost and perhaps coming back.
  let approvals: Approvals
  /// How long a sender whose link was lost may take to come back (`--resume-grace`).
  let resumeGrace: Duration
  /// `--stdout`: where the verified file goes instead of the destination.
  let sink: StandardOutputSink?

  /// Reports `event` from a Ferry session.
  func report(_ event: ResourceEvent) {
    report(event, refusalBeforeDecision: true)
  }

  /// Reports `event`; `refusalBeforeDecision` says whether an offer refused before anyone
  /// decided on it (an unsafe path, say) may be `--once`'s outcome: it is for a Ferry sender,
  /// whose invitation was accepted; not for a LocalSend sender, which anyone can be.
  func report(_ event: ResourceEvent, refusalBeforeDecision: Bool) {
    switch event {
    case .offerReceived(let transfer):
      approvals.started(transfer)
      gate?.receiving(transfer)
      incoming.add(transfer)
      output.emit(
        OfferStarted(
          peer: transfer.peer.displayName, files: transfer.files.count - transfer.folders,
          folders: transfer.folders, bytes: Int(transfer.totalBytes),
          streamed: transfer.streamed.count))
      Task { await follow(transfer) }
    case .started:
      break
    case .finished(let name, let peer, .success(let url), let digest):
      approvals.settled(peer.fingerprint, path: name)
      // --stdout: the verified (staged) file goes to standard output, not into place.
      let toOutput = sink != nil && url != nil
      if toOutput, let url { sink?.received(url) }
      output.emit(
        FileDone(
          received: name, from: peer.displayName, status: url == nil ? "skipped" : "stored",
          digest: digest, saved: toOutput ? "-" : url?.path))
      // On a terminal, past the first few of an offer, saved files are counted in its
      // summary line; a pipe (`| grep Saved`) gets every one.
      if toOutput || url == nil || !Self.stdoutIsTerminal || incoming.showsSaved(from: peer) {
        bar.above {
          output.say(
            toOutput
              ? "Verified \(printable(name)); writing it to standard output"
              : url.map { "Saved \(printable($0.path))" }
                ?? "Skipped \(printable(name)) (name taken)"
          )
        }
      }
    case .identical(let name, let peer, let url, let digest):
      approvals.settled(peer.fingerprint, path: name)
      // --stdout --dir D: D already holds it; that copy is written out (and stays).
      sink?.received(url, remove: false)
      output.emit(
        FileDone(
          received: name, from: peer.displayName, status: "identical", digest: digest,
          saved: sink == nil ? url.path : "-"))
      if sink == nil {
        incoming.countIdentical(from: peer)
        bar.above { output.say("Already there: \(printable(url.path)) (identical, not sent)") }
      }
    case .finished(let name, let peer, .failure(let error), _):
      // Ctrl-C: each offer it cut short is reported once, whole (``interrupted``), not file
      // by file after its `done`.
      guard !Interrupts.wasInterrupted else { return }
      output.emit(
        Failure(
          code: Self.code(error), message: error.description, peer: peer.displayName, path: name))
      // The first few of an offer; the rest are counted in its ending line (`--json` has all).
      if incoming.showsFailure(from: peer) {
        bar.above { output.note("\(printable(name)): \(error)") }
      }
    case .staleStagingRemoved(let files, let bytes, let destination):
      output.emit(StagingCleaned(files: files, bytes: Int(bytes), dir: destination.path))
      bar.above {
        output.note(
          "Removed \(Quantity.count(files, "partial file")) (\(Quantity.bytes(bytes))) that no sender resumed from "
            + "\(printable(destination.path))/.ferry-partial.")
      }
    case .offerRefused(let peer, let files, let error):
      output.emit(
        OfferRefused(
          peer: peer.displayName, files: files, code: Self.code(error).rawValue,
          message: error.description))
      bar.above { output.note("Refused the offer from \(peer): \(error)") }
      approvals.ended(peer.fingerprint)
      if gate?.claimRefusal(from: peer.fingerprint, whenOpen: refusalBeforeDecision) == true {
        outcomes.yield(
          CLIFailure(
            status: .transferFailed, message: "refused the offer from \(peer): \(error)",
            code: .refused))
      }
    case .offerFinished(let transfer, let error):
      // Cancelled by Ctrl-C: reported then (``interrupted(_:output:kept:)``).
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
        bar.above { output.note(Self.ending(of: transfer, error) + failures) }
      } else {
        if !failures.isEmpty { bar.above { output.note(String(failures.dropFirst())) } }
        let already = identical > 0 ? "; \(identical) already there, not sent" : ""
        let listed = unshown > 0 ? "; \(unshown) more saved than listed above" : ""
        // The rate of what crossed: not of files already there, skipped or resumed.
        let timing = TransferSummary.timing(
          UInt64(transfer.progress.bytesCrossed), took: ContinuousClock.now - started)
        bar.above {
          output.note(
            "Received \(TransferSummary.items(transfer.files.count, folders: transfer.folders)), "
              + "\(Quantity.bytes(UInt64(max(0, transfer.progress.totalBytes)))) from "
              + "\(transfer.peer)\(timing)"
              + "\(already)\(listed).")
        }
      }
      let sender = transfer.peer.fingerprint
      let lost = error.map { RetryPolicy.isRetryable($0) } ?? false
      // A batch of more files than one offer carries goes on with its next offer. Only the
      // part's own transfer ends the part, or the batch (an offer a person approved apart, or
      // an old link's late end, does not).
      // (A link really lost is also reported by the session's state changes.)
      let end = approvals.partEnded(transfer, failed: error != nil)
      let more = end.more
      if end.wasThePart {
        if lost { approvals.linkLost(sender) } else if !more { approvals.ended(sender) }
      }
      guard let gate else { return }
      if more {
        // --once: the outcome is the whole batch's; its sender offers the next part at once.
        guard case .wait(let generation) = gate.linkLost(transfer) else { return }
        Task { [outcomes, resumeGrace, peer = transfer.peer] in
          try? await Task.sleep(for: max(resumeGrace, Self.nextPartWait))
          if gate.resumeExpired(generation: generation) {
            outcomes.yield(
              CLIFailure(
                status: .transferFailed,
                message: "\(peer) did not send the rest of the files it announced",
                code: .peerDisconnected))
          }
        }
        return
      }
      let outcome = error.map {
        CLIFailure(
          status: .transferFailed,
          message: "not every file from \(transfer.peer) was received: \($0)",
          code: Self.code($0))
      }
      // --once: a sender that lost its link may come back for the same files; its outcome
      // waits that long. A transfer whose sender came back already is not the outcome.
      guard lost, resumeGrace > .zero else {
        // --stdout: the verified file goes out now, and how that went is the outcome.
        if gate.finished(transfer) { outcomes.yield(outcome ?? sink?.deliver()) }
        return
      }
      guard case .wait(let generation) = gate.linkLost(transfer) else { return }
      bar.above {
        output.note(
          "Waiting up to \(Int(resumeGrace.inSeconds)) s for \(transfer.peer) to come back "
            + "(--resume-grace).")
      }
      Task { [outcomes, resumeGrace] in
        try? await Task.sleep(for: resumeGrace)
        if gate.resumeExpired(generation: generation) { outcomes.yield(outcome) }
      }
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

  /// How long `--once` waits for the next part of a batch (its sender offers it as soon as
  /// the part before is answered; the receiver's decision is part of the wait).
  static let nextPartWait: Duration = .seconds(150)

  /// Progress bar and `progress` events for one offer.
  private func follow(_ transfer: IncomingTransfer) async {
    let label = transfer.peer.displayName
    // A part of a larger batch shows the batch's progress.
    let batch = approvals.part(of: transfer.peer.fingerprint)
    for await snapshot in transfer.progress.snapshots {
      guard let batch else {
        output.progress(snapshot, peer: label, bar: bar)
        continue
      }
      output.progress(
        snapshot.within(files: batch.before.files, bytes: batch.before.bytes, of: batch.summary),
        peer: label, bar: bar)
    }
  }

  /// Whether standard output, where "Saved PATH" lines go, is a terminal.
  private static let stdoutIsTerminal = isatty(STDOUT_FILENO) == 1

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
