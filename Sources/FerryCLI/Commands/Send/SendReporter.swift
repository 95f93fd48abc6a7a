import Ferry
import FerryAgent
import FerryLocalSend
import Foundation

/// What `ferry send` shows of a send's events (``SendEvent``): the NDJSON events of `--json`,
/// a progress bar per receiver, and lines for people. Any thread (deliveries to several
/// receivers report at once).
struct SendReporter: Sendable {
  let output: EventWriter
  let bar: ProgressBar

  /// Shows `event`.
  func report(_ event: SendEvent) {
    switch event {
    case .found(let peer):
      output.emit(PeerSeen(peer), as: .peerFound)
    case .connecting(let address):
      output.note("Connecting to \(address)…")
    case .asked(let label, let peer, let address, let code):
      let whom = address.map { "\(peer) at \($0)" } ?? printable(label)
      bar.above { output.note("Asking \(whom) to accept; verification code \(code)") }
      output.emit(Invited(peer: label, code: code.digits))
    case .askedLocalSend(let peer, let device, let target):
      output.emit(
        LocalSendFound(
          peer: peer.displayName, fingerprint: target.fingerprint?.hexString,
          protocol: "localsend", deviceType: device.deviceType,
          deviceModel: device.deviceModel, address: target.description))
      bar.above {
        output.note(
          "Asking \(peer) (LocalSend\(target.plainHTTP ? ", plain HTTP" : "")) to accept…")
      }
    case .keyChanged(let peer, let status, let previous):
      output.emit(
        KeyChanged(
          peer: peer.displayName, fingerprint: peer.fingerprint.hexString,
          previous: previous.hexString))
      if let warning = InvitationPrompt.warning(
        status, name: peer.displayName, now: peer.fingerprint)
      {
        bar.above { output.note(warning) }
      }
    case .declined(let label, let reason):
      output.emit(Declined(peer: label, reason: reason))
    case .accepted(let peer, let code):
      output.emit(
        SendAccepted(
          peer: peer.displayName, fingerprint: peer.fingerprint.hexString, code: code?.digits))
      bar.above {
        output.note("\(peer) accepted" + (code.map { " (verification code \($0))." } ?? "."))
      }
    case .acceptedLocalSend(let peer, let files):
      output.emit(
        SendAccepted(peer: peer.displayName, fingerprint: peer.fingerprint.hexString, code: nil))
      bar.above { output.note("\(peer) accepted \(Quantity.count(files, "file")).") }
    case .progress(let label, let snapshot):
      output.progress(snapshot, peer: label, bar: bar)
    case .resumed(let label, let peer, let attempt):
      output.emit(Resumed(peer: label, attempt: attempt))
      bar.above { output.note("Reconnected to \(peer.displayName); resuming.") }
    case .retrying(let label, let attempt, let delay, let reason, let wholeFiles):
      retrying(label, attempt: attempt, delay: delay, reason: reason, wholeFiles: wholeFiles)
    case .file(let label, let result):
      output.emit(FileDone(sent: result, to: label))
    case .localSendFile(let label, let file, let status):
      output.emit(FileDone(localSend: file, status: "\(status)", to: label))
    case .ended(let label):
      bar.remove(label)
    case .textDelivered(let peer, let text, let localSend):
      delivered(text, to: peer, localSend: localSend)
    case .done(let summary):
      done(summary)
    case .foldersLeftOut(let folders):
      output.note(
        "Left out \(Quantity.count(folders, "empty folder")): LocalSend sends files only.")
    case .failed(let label, let failure):
      let failure = CLIFailure(failure)
      output.emit(Failure(code: failure.code, message: failure.message, peer: label))
    }
  }

  /// The `retrying` event and its line: a Ferry receiver is reconnected to, a LocalSend
  /// device's cut files go again whole in a new session.
  private func retrying(
    _ label: String, attempt: Int, delay: Duration, reason: String, wholeFiles: Bool
  ) {
    let seconds = delay.inSeconds
    output.emit(
      Retrying(
        peer: label, attempt: attempt, delay: (seconds * 10).rounded() / 10, reason: reason))
    let wait = String(format: "%.1f", seconds)
    bar.above {
      if wholeFiles {
        output.note(
          "Lost \(label) mid-file; sending what was not delivered again, whole (LocalSend "
            + "cannot resume a file); trying again in \(wait) s (--retry-for)…")
      } else {
        output.note("Lost \(label) (\(reason)); reconnecting in \(wait) s…")
      }
    }
  }

  /// A text delivered: in a Ferry invitation (a `done` event), or shown or taken as a file by
  /// a LocalSend device.
  private func delivered(_ text: String, to peer: PeerID, localSend: LocalSendTextOutcome?) {
    guard let localSend else {
      output.emit(
        SendDone(
          peer: peer.displayName, files: 0, folders: 0, bytes: 0, stored: 0, identical: 0,
          bytesSent: text.utf8.count, unreadable: 0))
      output.say(
        "Sent the text (\(Quantity.count(text.count, "character"))) to \(peer.displayName).")
      return
    }
    output.emit(
      SendAccepted(peer: peer.displayName, fingerprint: peer.fingerprint.hexString, code: nil))
    bar.above {
      switch localSend {
      case .shown: output.note("\(peer) showed the text.")
      case .file: output.note("\(peer) took the text as a file (message.txt).")
      }
    }
  }

  /// The `done` event and the summary line of a batch to one receiver.
  private func done(_ summary: SendSummary) {
    output.emit(
      SendDone(
        peer: summary.peer.displayName, files: summary.files - summary.folders,
        folders: summary.folders, bytes: Int(summary.bytes), stored: summary.stored,
        identical: summary.identical, bytesSent: Int(summary.bytesSent),
        unreadable: summary.unreadable))
    // Files the receiver did not take: the failure says so, not a summary.
    guard summary.failed == 0 else { return }
    let line = TransferSummary.sent(
      files: summary.files, folders: summary.folders, stored: summary.stored,
      identical: summary.identical, leftOut: summary.leftOut, total: summary.bytes,
      sent: summary.bytesSent, to: summary.peer.displayName, took: summary.took)
    bar.above { output.note(line) }
  }
}
