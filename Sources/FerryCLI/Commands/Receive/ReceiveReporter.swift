import Ferry
import FerryAgent
import Foundation
import Synchronization

/// What `ferry receive` shows of its receiver's events (``ReceiverEvent``): a progress bar per
/// sender, the NDJSON events of `--json`, lines for people (where each file was saved, who was
/// accepted or declined and why, what the front ends meet), the text a sender sent, and — for
/// a receiver that ends (`--once`, a web link) — the outcome as the command's failure (nil:
/// every file stored, skipped or identical). One event at a time, in order.
final class ReceiveReporter: Sendable {
  let output: EventWriter
  let bar: ProgressBar
  let incoming: IncomingTransfers
  /// `--stdout`: where the verified file goes instead of the destination.
  let sink: StandardOutputSink?
  /// What the `advertising` event and banner say of this receiver.
  let advertised: Advertised?
  /// Lines said once, right after the banner.
  let afterBanner: [String]
  private let state = Mutex(State())

  /// What the banner says: the destination, the listener's port and fingerprint.
  struct Advertised: Sendable {
    let into: String
    let destination: URL
    let fingerprint: Fingerprint
    let serviceType: ServiceType
    let port: UInt16
    let policy: String
  }

  private struct State {
    var bannerShown = false
    var failure: CLIFailure?
    var ended = false
  }

  init(
    output: EventWriter, bar: ProgressBar, incoming: IncomingTransfers, sink: StandardOutputSink?,
    advertised: Advertised?, afterBanner: [String]
  ) {
    (self.output, self.bar, self.incoming, self.sink, self.advertised, self.afterBanner) = (
      output, bar, incoming, sink, advertised, afterBanner
    )
  }

  /// The receiver's outcome as the command's failure, once it ended (nil: it succeeded, or it
  /// has not ended).
  var failure: CLIFailure? { state.withLock { $0.failure } }

  /// Whether the receiver reported its outcome.
  var ended: Bool { state.withLock { $0.ended } }

  /// Shows `event`.
  func report(_ event: ReceiverEvent) {
    switch event {
    case .invitation(let invitation, let summary):
      output.emit(
        InvitationAsked(
          peer: invitation.peer.displayName, fingerprint: invitation.fingerprint.hexString,
          status: InvitationPrompt.status(invitation.status),
          code: invitation.verificationCode.digits,
          files: summary?.files, folders: summary.map { $0.folders ?? 0 },
          text: summary?.text != nil, bytes: summary.map { Int($0.bytes) },
          streamed: summary.map { $0.streamed ?? 0 },
          expires: EventWriter.timestamp(InvitationPrompt.date(of: invitation.expiresAt))))
    case .localSendAsked(let sender, let status, let offer):
      output.emit(
        LocalSendAsked(
          peer: sender.peer.displayName, fingerprint: sender.peer.fingerprint.hexString,
          status: InvitationPrompt.status(status),
          protocol: sender.isBrowser ? "web" : "localsend", verified: sender.verified,
          deviceType: sender.device.deviceType, deviceModel: sender.device.deviceModel,
          address: sender.address, files: offer?.files.count, folders: offer?.folders.count,
          text: offer == nil, bytes: offer.map { Int($0.totalBytes) }))
    case .gaveUpBeforeAsked(let peer):
      output.emit(Withdrawn(peer: peer.displayName))
      note("\(peer) gave up waiting before it could be asked about.")
    case .suspicious(let peer, let status):
      if let warning = InvitationPrompt.warning(
        status, name: peer.displayName, now: peer.fingerprint)
      {
        note(warning)
      }
    case .resuming(let peer, let files):
      let what = files.map { "the \(Quantity.count($0, "file"))" } ?? "the files"
      note(
        "\(peer) lost its connection and is back for \(what) accepted before; "
          + "resuming without asking again (--resume-grace).")
    case .withdrawn(let peer):
      output.emit(Withdrawn(peer: peer.displayName))
    case .declined(let sender, let reason, let text):
      output.emit(Declined(peer: sender.peer.displayName, reason: reason))
      note(
        text
          ? "Declined the text of \(sender) (\(reason))."
          : "Declined \(sender.peer) (\(reason)).")
    case .accepted(let sender, let code, let resumed):
      output.emit(ReceiveAccepted(peer: sender.peer.displayName, resumed: resumed))
      note(
        code.map { "Accepted \(sender.peer), verification code \($0)." }
          ?? "Accepted \(sender).")
    case .acceptFailed(let peer, let error):
      output.emit(
        Failure(code: .acceptFailed, message: error.description, peer: peer.displayName))
      note("Could not accept \(peer): \(error)")
    case .text(let peer, let text):
      show(text, from: peer)
    case .offerDeclined(let peer, let reason, let files, let bytes):
      output.emit(
        OfferDeclined(peer: peer.displayName, reason: reason, files: files, bytes: Int(bytes)))
      note(
        "Declined \(Quantity.count(files, "file")), \(Quantity.bytes(bytes)) from "
          + "\(peer) (\(reason)).")
    case .transferStarted(let transfer, let batch):
      incoming.add(transfer)
      output.emit(
        OfferStarted(
          peer: transfer.peer.displayName, files: transfer.files.count - transfer.folders,
          folders: transfer.folders, bytes: Int(transfer.totalBytes),
          streamed: transfer.streamed.count))
      Task { await follow(transfer, batch: batch) }
    case .resource(let event):
      report(event)
    case .transferEnded(let transfer, let error):
      ended(transfer, error)
    case .awaitingResume(let peer, let grace):
      note(
        "Waiting up to \(Int(grace.inSeconds)) s for \(peer) to come back (--resume-grace).")
    case .interrupted(let transfer):
      _ = incoming.remove(transfer)
      Self.interrupted(transfer, output: output, kept: sink == nil)
    case .advertising, .discoveryUnavailable, .advertisedLate, .renamed, .discoveryInterrupted,
      .discoveryFailed, .senderRefused, .linkExpired:
      reportFrontEnd(event)
    case .localSendSeen:
      // For ferry daemon's outbox: a receiver shows nothing of it.
      break
    case .outcome(let outcome):
      let failure = self.failure(outcome)
      state.withLock {
        $0.failure = failure
        $0.ended = true
      }
    }
  }

  /// Shows what the front ends meet: being advertised (and the banner, the first time),
  /// avahi-daemon going and coming, senders turned away, the web link's end.
  private func reportFrontEnd(_ event: ReceiverEvent) {
    switch event {
    case .advertising(let name, let discoverable):
      guard let advertised else { return }
      output.emit(
        Advertising(
          name: name, fingerprint: advertised.fingerprint.hexString,
          service: advertised.serviceType.dnsSDType, port: Int(advertised.port),
          dir: advertised.destination.path, discoverable: discoverable))
      let first = state.withLock { state in
        defer { state.bannerShown = true }
        return !state.bannerShown
      }
      guard first else { return }
      // A message for people: stderr, as every other (only "Saved PATH" lines are stdout).
      output.note(
        advertised.into + " as '\(name)' [\(advertised.fingerprint.shortDescription)], "
          + "port \(advertised.port). \(advertised.policy) Press Ctrl-C to stop.")
      for line in afterBanner { output.note(line) }
    case .discoveryUnavailable(let reason):
      // Still useful: senders can connect with --address.
      output.emit(DiscoveryOutage(reason: reason), as: .discoveryUnavailable)
      let addresses = LocalAddresses.all()
      let these =
        addresses.count > 1
        ? " (this machine's addresses: \(addresses.prefix(6).joined(separator: ", ")))" : ""
      output.note(
        "Not advertised: avahi-daemon is unavailable (\(reason)). Nearby machines cannot find "
          + "this one until it starts; they can still send with 'ferry send --address "
          + "\(LocalAddresses.example(port: advertised?.port ?? 0))'\(these). Start avahi-daemon "
          + "(e.g. 'sudo service avahi-daemon start') to be found.")
    case .advertisedLate(let name):
      output.note("avahi-daemon is running now: advertised as '\(name)'.")
    case .renamed(let from, let to):
      output.emit(Renamed(from: from, to: to))
      output.note("The name '\(from)' is taken on the network; advertising as '\(to)'.")
    case .discoveryInterrupted(let reason):
      output.emit(DiscoveryOutage(reason: reason), as: .discoveryInterrupted)
      output.note("avahi-daemon went away (\(reason)); advertising again when it returns.")
    case .discoveryFailed(let error):
      output.emit(DiscoveryFailed(message: error.description))
      output.note("Advertising failed: \(error). Senders can still use --address.")
    case .senderRefused(let refusal, let alias, let message):
      output.emit(
        SenderRefused(
          protocol: "localsend", address: refusal.address, name: alias,
          code: refusal.reason.rawValue, message: message))
      output.note(message)
    case .linkExpired:
      output.note("The web link expired: stopped receiving.")
    default:
      break
    }
  }

  /// A line for people, above the progress bars.
  func note(_ line: String) {
    bar.above { output.note(line) }
  }

  /// Shows an accepted sender's text: a `text` event, or its lines on stdout (escaped: a
  /// peer's text never moves the cursor).
  private func show(_ text: String, from peer: PeerID) {
    output.emit(TextReceived(peer: peer.displayName, text: text))
    if sink != nil {
      // --stdout: the text is the data; escaped only when a terminal would act on it.
      let terminal = StandardStream.output.isTerminal
      StandardStream.output.write(terminal ? DisplayText.terminalSafe(text) + "\n" : text)
    } else if !output.json {
      // Even with --quiet (it was accepted to be read), each line marked as the peer's, so
      // that none can pass for one of ferry's own.
      bar.above {
        StandardStream.output.write(
          "\(DisplayText.terminalSafe(peer.description)) says:\n" + Self.markedLines(text))
      }
    }
  }

  /// A peer's text as the lines a terminal shows, each marked `  | ` and escaped. Split on the
  /// byte a terminal starts a line at (0x0A), never on Swift's `Character`s: "\r\n" is one
  /// Character, and split on "\n" it kept its newline, so a line began unmarked and could pass
  /// for one of ferry's own.
  static func markedLines(_ text: String) -> String {
    var shown = ""
    for line in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false) {
      shown += "  | " + DisplayText.terminalSafe(String(decoding: line, as: UTF8.self)) + "\n"
    }
    return shown
  }

  /// Shows a file's verdict, or a refusal, as the library reported it.
  private func report(_ event: ResourceEvent) {
    switch event {
    case .finished(let name, let peer, .success(let url), let digest):
      // --stdout: the verified (staged) file goes to standard output, not into place.
      let toOutput = sink != nil && url != nil
      if toOutput, let url { sink?.received(url) }
      output.emit(
        FileDone(
          received: name, from: peer.displayName,
          status: url == nil ? "\(FileStatus.skipped)" : "\(FileStatus.stored)",
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
      // --stdout --dir D: D already holds it; that copy is written out (and stays).
      sink?.received(url, remove: false)
      output.emit(
        FileDone(
          received: name, from: peer.displayName, status: "\(FileStatus.identical)",
          digest: digest, saved: sink == nil ? url.path : "-"))
      if sink == nil {
        incoming.countIdentical(from: peer)
        bar.above { output.say("Already there: \(printable(url.path)) (identical, not sent)") }
      }
    case .finished(let name, let peer, .failure(let error), _):
      output.emit(
        Failure(
          code: Self.code(error), message: error.description, peer: peer.displayName, path: name))
      // The first few of an offer; the rest are counted in its ending line (`--json` has all).
      if incoming.showsFailure(from: peer) {
        bar.above { output.note("\(printable(name)): \(error)") }
      }
    case .staleStagingRemoved(let files, let bytes, let destination):
      output.emit(StagingCleaned(files: files, bytes: Int(bytes), dir: destination.path))
      note(
        "Removed \(Quantity.count(files, "partial file")) (\(Quantity.bytes(bytes))) that no sender resumed from "
          + "\(printable(destination.path))/.ferry-partial.")
    case .offerRefused(let peer, let files, let error):
      output.emit(
        OfferRefused(
          peer: peer.displayName, files: files, code: Self.code(error).rawValue,
          message: error.description))
      note("Refused the offer from \(peer): \(error)")
    case .offerReceived, .started, .offerFinished:
      break
    }
  }

  /// Progress bar and `progress` events for one offer (a part of a larger batch shows the
  /// batch's progress).
  private func follow(_ transfer: IncomingTransfer, batch: BatchPosition?) async {
    let label = transfer.peer.displayName
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
}
