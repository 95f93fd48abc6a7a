import Ferry
import FerryLocalSend
import Foundation

/// `ferry send --localsend`: sends the batch (or `--text`) to one LocalSend device with the
/// progress, events and exit codes of a Ferry send. Each file's SHA-256 is announced (the
/// device verifies it); uploads run a few at once; a dropped upload is retried whole within
/// `--retry-for` (LocalSend cannot resume a file).
struct LocalSendSending: Sendable {
  let identity: Identity
  let name: String
  let pin: String?
  let output: EventWriter
  let bar: ProgressBar
  let keys: KeyCheck
  let deadline: ContinuousClock.Instant
  let retryFor: Duration
  /// What Ctrl-C must undo besides the upload (standard input's spool).
  var cleanup: @Sendable () -> Void = {}

  /// How this machine presents itself to LocalSend devices.
  var me: LocalSendDevice {
    LocalSendDevice(
      alias: name, deviceModel: "Ferry", deviceType: "headless",
      fingerprint: identity.fingerprint.hexString, port: Int(LocalSendProtocol.defaultPort),
      protocol: "https", download: false)
  }

  /// Finds devices as this machine.
  var targets: LocalSendTargets { LocalSendTargets(identity: identity, me: me, output: output) }

  /// Sends `batch` or `text` to the device `to` names (classified as `reference`: a trusted
  /// name also finds its key), or the one at `address`, or the one already `found`.
  ///
  /// - Throws: ``CLIFailure``: declined (exit 4), busy or failed (1), PIN (5), not found (3).
  func run(
    batch: SendBatch?, text: String?, to wanted: String?, as reference: PeerReference? = nil,
    address: String?, found known: LocalSendTargets.Found? = nil
  ) async throws(CLIFailure) {
    let upload = try targets.makeUpload()
    let found: LocalSendTargets.Found
    if let known {
      found = known
    } else if let address {
      found = try await targets.ask(
        address: address, wanted: wanted, upload: upload, plainHTTP: false)
    } else {
      found = try await targets.discover(
        wanted, as: reference, until: deadline, upload: upload)
    }
    let peer = Self.peer(found)
    if found.target.fingerprint != nil,
      let failure = await keys.confirm(
        peer, pinned: found.pinned, timeout: max(.seconds(1), deadline - .now))
    {
      throw report(peer, failure)
    }
    // (Replaces the command's earlier cleanup, which is done here too.)
    Interrupts.onInterrupt(reportingTo: output) { [cleanup] in
      cleanup()
      await upload.cancel()
    }
    output.emit(
      LocalSendFound(
        peer: peer.displayName, fingerprint: found.target.fingerprint?.hexString,
        protocol: "localsend", deviceType: found.device.deviceType,
        deviceModel: found.device.deviceModel, address: found.target.description))
    bar.above {
      output.note(
        "Asking \(peer) (LocalSend\(found.target.plainHTTP ? ", plain HTTP" : "")) to accept…")
    }
    if let text {
      let outcome: LocalSendTextOutcome
      do throws(LocalSendSendError) {
        outcome = try await upload.send(text: text, to: found.target, pin: pin)
      } catch {
        throw report(peer, Self.failure(error, peer: peer))
      }
      if found.target.fingerprint != nil { keys.remember(peer) }
      output.emit(
        SendAccepted(peer: peer.displayName, fingerprint: peer.fingerprint.hexString, code: nil))
      bar.above {
        switch outcome {
        case .shown: output.note("\(peer) showed the text.")
        case .file: output.note("\(peer) took the text as a file (message.txt).")
        }
      }
      return
    }
    guard let batch else { return }
    try await send(batch, with: upload, to: found, peer: peer)
  }

  /// Sends the files: all in one LocalSend session.
  private func send(
    _ batch: SendBatch, with upload: LocalSendUpload, to found: LocalSendTargets.Found, peer: PeerID
  ) async throws(CLIFailure) {
    let (items, folders, unreadable) = try Self.files(of: batch, output: output)
    let progress = TransferProgress(files: items.map { ($0.path, $0.size) })
    let label = peer.displayName
    let reporter = Task { [output, bar] in
      for await snapshot in progress.snapshots {
        output.progress(snapshot, peer: label, bar: bar)
      }
    }
    let started = ContinuousClock.now
    // Each file's SHA-256, once for every attempt.
    var results: [LocalSendSentFile]
    do throws(LocalSendSendError) {
      results = try await LocalSendUpload.plan(items)
    } catch {
      progress.finish()
      await reporter.value
      bar.remove(label)
      throw report(peer, Self.failure(error, peer: peer))
    }
    // One backoff for both protocols (RetryPolicy: 1, 2, 4, 8, then 15 s, ±20 %), and
    // --retry-for is time without progress (a file delivered), as for Ferry receivers.
    var retry = LocalSendRetry(policy: RetryPolicy(retryFor: retryFor))
    while true {
      let storedBefore = results.count { $0.status == 200 }
      let reason: String
      do throws(LocalSendSendError) {
        results = try await upload.send(
          items, to: found.target, pin: pin, progress: progress, previous: results,
          onAccepted: { [output, keys, bar] count in
            if found.target.fingerprint != nil { keys.remember(peer) }
            output.emit(
              SendAccepted(peer: label, fingerprint: peer.fingerprint.hexString, code: nil))
            bar.above { output.note("\(peer) accepted \(Quantity.count(count, "file")).") }
          })
        if results.count(where: { $0.status == 200 }) > storedBefore { retry.progressed() }
        // Uploads cut off (status 0) go again whole, in a new session; what was delivered is
        // not offered again.
        let cut = results.filter { $0.status == 0 }
        guard !cut.isEmpty else { break }
        retry.cutOff()
        reason = cut[0].reason ?? "the upload was cut off"
      } catch {
        guard Self.isTransient(error, afterCut: retry.hadCut), !Interrupts.wasInterrupted,
          let delay = retry.next()
        else {
          progress.finish()
          await reporter.value
          bar.remove(label)
          if case .cancelled = error, Interrupts.wasInterrupted {
            throw CLIFailure(status: .interrupted, message: "interrupted", code: .interrupted)
          }
          throw report(peer, Self.failure(error, peer: peer))
        }
        try await wait(delay, attempt: retry.attempt, reason: printable("\(error)"), peer: label)
        continue
      }
      guard let delay = retry.next() else { break }
      try await wait(
        delay, attempt: retry.attempt, reason: reason, peer: label,
        note: "Lost \(label) mid-file; sending what was not delivered again, whole (LocalSend "
          + "cannot resume a file)")
    }
    progress.finish()
    await reporter.value
    bar.remove(label)
    var stored = 0
    var leftOut = 0
    var failed: [LocalSendSentFile] = []
    for file in results {
      let status: String
      if file.skipped {
        status = "skipped"
        leftOut += 1
      } else if file.status == 200 {
        status = "stored"
        stored += 1
      } else {
        status = "failed"
        failed.append(file)
      }
      output.emit(FileDone(localSend: file, status: status, to: label))
    }
    let bytes = items.reduce(UInt64(0)) { $0 + $1.size }
    output.emit(
      SendDone(
        peer: label, files: items.count, folders: 0, bytes: Int(bytes), stored: stored,
        identical: 0, bytesSent: Int(progress.bytesCrossed), unreadable: unreadable))
    if folders > 0 {
      output.note(
        "Left out \(Quantity.count(folders, "empty folder")): LocalSend sends files only.")
    }
    guard failed.isEmpty else {
      let first = failed[0]
      let integrity = failed.contains { $0.status == 422 }
      throw report(
        peer,
        CLIFailure(
          status: .transferFailed,
          message: "\(peer) did not take \(Quantity.count(failed.count, "file")): "
            + "\(printable(first.path)) (\(Self.outcome(of: first)))",
          code: integrity ? .integrity : .transferFailed))
    }
    let line = TransferSummary.sent(
      files: items.count, folders: 0, stored: stored, identical: 0, leftOut: leftOut,
      total: bytes, sent: UInt64(max(0, progress.bytesCrossed)), to: peer.displayName,
      took: ContinuousClock.now - started)
    bar.above { output.note(line) }
    if unreadable > 0 {
      throw CLIFailure(
        status: .partial,
        message: "\(peer.displayName) got the rest, but not "
          + "\(Quantity.count(unreadable, "unreadable path")) (left out above)",
        code: .unreadable)
    }
  }

  /// Says that attempt `attempt` comes after `delay` (a `retrying` event and a note), and
  /// waits.
  ///
  /// - Throws: ``CLIFailure`` (interrupted) when Ctrl-C ends the wait.
  private func wait(
    _ delay: Duration, attempt: Int, reason: String, peer label: String, note: String? = nil
  ) async throws(CLIFailure) {
    let seconds = delay.inSeconds
    output.emit(
      Retrying(
        peer: label, attempt: attempt, delay: (seconds * 10).rounded() / 10, reason: reason))
    bar.above {
      output.note(
        "\(note ?? "\(label): \(reason)"); trying again in \(String(format: "%.1f", seconds)) s "
          + "(--retry-for)…")
    }
    do {
      try await Task.sleep(for: delay)
    } catch {
      throw CLIFailure(status: .interrupted, message: "interrupted", code: .interrupted)
    }
    if Interrupts.wasInterrupted {
      throw CLIFailure(status: .interrupted, message: "interrupted", code: .interrupted)
    }
  }

  /// The batch's files with their sizes, its empty folders (not sent: LocalSend has none),
  /// and how many paths could not be read.
  static func files(of batch: SendBatch, output: EventWriter) throws(CLIFailure)
    -> (items: [(url: URL, path: String, size: UInt64)], folders: Int, unreadable: Int)
  {
    var parts = batch.parts()
    var items: [(url: URL, path: String, size: UInt64)] = []
    var folders = 0
    while true {
      let part: [ResourceItem]
      do {
        guard let next = try parts.next() else { break }
        part = next
      } catch {
        throw CLIFailure(status: .usage, message: "\(error)", code: .cannotRead)
      }
      for item in part {
        if item.isFolder {
          folders += 1
          continue
        }
        if item.isStreamed {
          throw CLIFailure(
            status: .usage,
            message: "LocalSend needs each file's size before it is sent: save standard input "
              + "to a file first",
            code: .usage)
        }
        var info = stat()
        guard stat(item.url.path, &info) == 0 else {
          throw CLIFailure(
            status: .usage,
            message: "cannot read \(printable(item.url.path)): \(String(cString: strerror(errno)))",
            code: .cannotRead)
        }
        items.append((item.url, item.path, UInt64(max(0, info.st_size))))
      }
    }
    guard items.count <= LocalSendProtocol.Limits.maximumFiles else {
      throw CLIFailure(
        status: .usage,
        message: "\(items.count) files: a LocalSend session takes at most "
          + "\(LocalSendProtocol.Limits.maximumFiles)",
        code: .usage)
    }
    return (items, folders, parts.unreadable)
  }

  /// The device as Ferry's known-peers and messages see it: its alias and the key its
  /// certificate presented (over plain HTTP, a key derived from its address: never trusted).
  private static func peer(_ found: LocalSendTargets.Found) -> PeerID {
    let key =
      found.target.fingerprint
      ?? Fingerprint(
        sha256Of: Array("ferry: unverified LocalSend device at \(found.target)".utf8))
    return LocalSendSender.peer(alias: found.device.alias, key: key)
  }

  /// Why a device declined, as its answer says it (": busy right now"), or nothing.
  static func because(_ error: LocalSendSendError) -> String {
    guard case .declined(let why) = error, !why.isEmpty else { return "" }
    return ": " + printable(why)
  }

  /// What became of a file the device did not take, in words: its answer's status (none for
  /// an upload cut off) and reason.
  static func outcome(of file: LocalSendSentFile) -> String {
    let reason = file.reason.map { printable($0) }
    switch file.status {
    case nil: return "not sent"
    case 0?: return "cut off" + (reason.map { ": \($0)" } ?? "")
    case let status?: return "HTTP \(status)" + (reason.map { ": \($0)" } ?? "")
    }
  }

  /// Whether `error` may pass while `--retry-for` lasts: the device out of reach or the
  /// connection cut — and, `afterCut` (uploads were cut off before), no answer in time or busy
  /// (it may still be ending the session that was cut). A refusal, a PIN or a wrong
  /// certificate is final.
  static func isTransient(_ error: LocalSendSendError, afterCut: Bool) -> Bool {
    switch error {
    case .request(.unreachable), .request(.failed): return true
    case .request(.timedOut), .busy: return afterCut
    default: return false
    }
  }

  /// A refused send as the CLI says it: 403 declined (exit 4), 409 busy (1), 401 and 429 a
  /// PIN (5).
  static func failure(_ error: LocalSendSendError, peer: PeerID) -> CLIFailure {
    switch error {
    case .declined:
      return CLIFailure(
        status: .declined, message: "\(peer) declined" + Self.because(error),
        code: .declined)
    case .busy:
      return CLIFailure(
        status: .transferFailed,
        message: "\(peer) is busy with another transfer; try again when it is done",
        code: .busy)
    case .pinRequired:
      return CLIFailure(
        status: .authentication,
        message: "\(peer) wants a PIN, or refused the one given: give it with --pin PIN",
        code: .pin)
    case .tooManyPinAttempts:
      return CLIFailure(
        status: .authentication,
        message: "\(peer) refuses this machine after wrong PINs (--pin); wait, then try again",
        code: .pin)
    case .cancelled:
      return CLIFailure(status: .transferFailed, message: "cancelled", code: .cancelled)
    case .unreadable:
      return CLIFailure(status: .usage, message: error.description, code: .cannotRead)
    case .refused, .request:
      return CLIFailure(
        status: .transferFailed, message: "to \(peer): \(printable("\(error)"))",
        code: .transferFailed)
    }
  }

  private func report(_ peer: PeerID, _ failure: CLIFailure) -> CLIFailure {
    output.emit(Failure(code: failure.code, message: failure.message, peer: peer.displayName))
    return failure
  }
}
