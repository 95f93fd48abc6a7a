import Ferry
import FerryLocalSend
import Foundation

/// A batch (or a text) sent to one LocalSend device with the events and outcomes of a Ferry
/// send: each file's SHA-256 announced (the device verifies it), uploads a few at once, a
/// dropped upload retried whole as the send's ``RetryPolicy`` says (the schedule a Ferry send
/// follows: ``LocalSendUpload/send(_:to:pin:progress:retrying:events:)``), and each file's
/// answer as a verdict.
public struct LocalSendDelivery: Sendable {
  /// Where the device listens and the key it must prove (nil over plain HTTP, or an app
  /// reached by address that announced none).
  public let target: LocalSendTarget
  /// What it says of itself.
  public let device: LocalSendDevice
  /// Whether the user named its key.
  public let pinned: Bool
  let upload: LocalSendUpload
  let pin: String?
  let retry: RetryPolicy
  let keys: KeyCheck
  let events: @Sendable (SendEvent) -> Void
  /// When asking must be done by (the key check's question).
  let deadline: ContinuousClock.Instant

  /// A delivery to the device `device` at `target` (`pinned`: the user named its key) with
  /// `upload`, `pin` when it wants one, retried as `retry` says; `decider` answers what only
  /// the person sending can; what happens goes to `events`.
  public init(
    to target: LocalSendTarget, device: LocalSendDevice, pinned: Bool, upload: LocalSendUpload,
    pin: String?, retry: RetryPolicy, deadline: ContinuousClock.Instant, knownPeers: KnownPeers,
    decider: any SendDecider, events: @escaping @Sendable (SendEvent) -> Void
  ) {
    (self.target, self.device, self.pinned, self.upload, self.pin) = (
      target, device, pinned, upload, pin
    )
    (self.retry, self.deadline, self.events) = (retry, deadline, events)
    keys = KeyCheck(knownPeers: knownPeers, decider: decider, events: events)
  }

  /// The device as Ferry's known peers and messages see it: its alias and the key its
  /// certificate presented (over plain HTTP, a key derived from its address: never trusted).
  public var peer: PeerID {
    let key =
      target.fingerprint
      ?? Fingerprint(sha256Of: Array("ferry: unverified LocalSend device at \(target)".utf8))
    return LocalSendSender.peer(alias: device.alias, key: key)
  }

  /// Sends `batch` (files; empty folders are left out, LocalSend has none), or with none,
  /// `text`. Nil when everything was delivered.
  public func send(batch: SendBatch?, text: String?) async -> SendFailure? {
    let peer = self.peer
    if target.fingerprint != nil,
      let failure = await keys.confirm(
        peer, pinned: pinned, timeout: max(.seconds(1), deadline - .now))
    {
      return report(failure)
    }
    events(.askedLocalSend(peer: peer, device: device, target: target))
    if let text {
      let outcome: LocalSendTextOutcome
      do throws(LocalSendSendError) {
        outcome = try await upload.send(text: text, to: target, pin: pin)
      } catch {
        return report(Self.failure(error, peer: peer))
      }
      if target.fingerprint != nil { keys.remember(peer) }
      events(.textDelivered(peer, text: text, localSend: outcome))
      return nil
    }
    guard let batch else { return nil }
    return await send(batch, peer: peer)
  }

  /// Sends the files: all in one LocalSend session, tried again in new sessions for what was
  /// cut off.
  private func send(_ batch: SendBatch, peer: PeerID) async -> SendFailure? {
    let files: SendFiles
    do {
      files = try SendFiles(batch)
    } catch {
      return report(error)
    }
    let items = files.items
    let progress = TransferProgress(files: items.map { ($0.path, $0.size) })
    let label = peer.displayName
    let reporter = Task { [events] in
      for await snapshot in progress.snapshots { events(.progress(label: label, snapshot)) }
    }
    let started = ContinuousClock.now
    let results: [LocalSendSentFile]
    do throws(LocalSendSendError) {
      results = try await upload.send(
        items, to: target, pin: pin, progress: progress, retrying: retry
      ) { [events, keys, target] event in
        switch event {
        case .accepted(let count):
          if target.fingerprint != nil { keys.remember(peer) }
          events(.acceptedLocalSend(peer, files: count))
        case .retrying(let attempt, let delay, let reason, let cutOff):
          events(
            .retrying(
              label: label, attempt: attempt, delay: delay, reason: reason, wholeFiles: cutOff))
        }
      }
    } catch {
      progress.finish()
      await reporter.value
      events(.ended(label: label))
      if case .cancelled = error { return .interrupted }
      return report(Self.failure(error, peer: peer))
    }
    progress.finish()
    await reporter.value
    events(.ended(label: label))
    var (stored, leftOut) = (0, 0)
    var failed: [LocalSendSentFile] = []
    for file in results {
      let status = Self.verdict(of: file)
      switch status {
      case .stored: stored += 1
      case .skipped: leftOut += 1
      default: failed.append(file)
      }
      events(.localSendFile(label: label, file, status: status))
    }
    let bytes = items.reduce(UInt64(0)) { $0 + $1.size }
    if files.folders > 0 { events(.foldersLeftOut(files.folders)) }
    events(
      .done(
        SendSummary(
          peer: peer, files: items.count, folders: 0, bytes: bytes, stored: stored, identical: 0,
          leftOut: leftOut, bytesSent: UInt64(max(0, progress.bytesCrossed)),
          unreadable: files.unreadable, failed: failed.count,
          took: ContinuousClock.now - started)))
    guard failed.isEmpty else {
      let first = failed[0]
      let integrity = failed.contains { $0.status == 422 }
      return report(
        SendFailure(
          integrity ? .integrity : .transferFailed,
          "\(peer) did not take \(Quantity.count(failed.count, "file")): "
            + "\(printable(first.path)) (\(Self.outcome(of: first)))"))
    }
    guard files.unreadable == 0 else {
      return SendFailure(
        .unreadable(files.unreadable),
        "\(peer.displayName) got the rest, but not "
          + "\(Quantity.count(files.unreadable, "unreadable path")) (left out above)")
    }
    return nil
  }

  /// What a device's answer for a file is, as a verdict: left out (it did not ask for it),
  /// stored (200), corrupt (422: its digest did not match there), or failed.
  public static func verdict(of file: LocalSendSentFile) -> FileStatus {
    if file.skipped { return .skipped }
    switch file.status {
    case 200?: return .stored
    case 422?: return .corrupt
    default: return .failed
    }
  }

  /// What became of a file the device did not take, in words: its answer's status (none for
  /// an upload cut off) and reason.
  public static func outcome(of file: LocalSendSentFile) -> String {
    let reason = file.reason.map { printable($0) }
    switch file.status {
    case nil: return "not sent"
    case 0?: return "cut off" + (reason.map { ": \($0)" } ?? "")
    case let status?: return "HTTP \(status)" + (reason.map { ": \($0)" } ?? "")
    }
  }

  /// Why a device declined, as its answer says it (": busy right now"), or nothing.
  static func because(_ error: LocalSendSendError) -> String {
    guard case .declined(let why) = error, !why.isEmpty else { return "" }
    return ": " + printable(why)
  }

  /// A refused send: 403 declined, 409 busy, 401 and 429 a PIN.
  public static func failure(_ error: LocalSendSendError, peer: PeerID) -> SendFailure {
    switch error {
    case .declined:
      return SendFailure(.declined, "\(peer) declined" + Self.because(error))
    case .busy:
      return SendFailure(
        .busy, "\(peer) is busy with another transfer; try again when it is done")
    case .pinRequired:
      return SendFailure(
        .pin, "\(peer) wants a PIN, or refused the one given: give it with --pin PIN")
    case .tooManyPinAttempts:
      return SendFailure(
        .pin, "\(peer) refuses this machine after wrong PINs (--pin); wait, then try again")
    case .cancelled:
      return SendFailure(.cancelled, "cancelled")
    case .unreadable:
      return SendFailure(.cannotRead, error.description)
    case .refused, .request:
      return SendFailure(.transferFailed, "to \(peer): \(printable("\(error)"))")
    }
  }

  /// A failure reported now, and returned.
  private func report(_ failure: SendFailure) -> SendFailure {
    events(.failed(label: peer.displayName, failure))
    return failure
  }
}
