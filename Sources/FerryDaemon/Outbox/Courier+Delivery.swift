import Ferry
import FerryAgent
import FerryLocalSend
import Foundation

extension Courier {
  /// Delivers `entry` to a Ferry peer: `send` runs the ``FerryDelivery`` made for it.
  func deliver(
    _ entry: OutboxEntry,
    send: @Sendable (Session, SendBatch, FerryDelivery) async -> SendFailure?
  ) async {
    guard let (entry, batch, base) = begin(entry) else { return }
    let session: Session
    do {
      session = try Session(
        identity: configuration.identity, displayName: configuration.name, accepting: [])
    } catch {
      return end(entry.id, SendFailure(.usage, "\(error)"))
    }
    let delivery = FerryDelivery(
      session: session, batch: batch, summary: batch.summary,
      deadline: .now + Self.findTimeout, retry: RetryPolicy(retryFor: .seconds(60)),
      checksum: .xxh3, knownPeers: configuration.knownPeers, decider: RefusingSendDecider(),
      events: track(entry.id, base: base))
    registerStop(entry.id) { _ = await delivery.interrupt() }
    let failure = await send(session, batch, delivery)
    await session.closeAndWait(timeout: .seconds(1))
    end(entry.id, failure)
  }

  /// Delivers `entry` to the LocalSend device `sighting` announced, its key pinned.
  func deliver(localSend entry: OutboxEntry, to sighting: LocalSendSighting) async {
    guard let (entry, batch, base) = begin(entry) else { return }
    guard sighting.device.usesTLS, let key = try? Fingerprint(parsing: entry.fingerprint) else {
      return end(
        entry.id,
        SendFailure(.authentication, "the device announces plain HTTP: nothing would prove it"))
    }
    let me = LocalSendDevice(
      alias: configuration.name, deviceModel: "Ferry", deviceType: "headless",
      fingerprint: configuration.identity.fingerprint.hexString,
      port: Int(LocalSendProtocol.defaultPort), protocol: "https", download: false)
    let upload: LocalSendUpload
    do {
      upload = try LocalSendUpload(identity: configuration.identity, me: me)
    } catch {
      return end(entry.id, SendFailure(.usage, "\(error)"))
    }
    let target = LocalSendTarget(
      host: sighting.address, port: sighting.device.port ?? Int(LocalSendProtocol.defaultPort),
      fingerprint: key)
    let delivery = LocalSendDelivery(
      to: target, device: sighting.device, pinned: true, upload: upload, pin: nil,
      retry: RetryPolicy(retryFor: .seconds(60)), deadline: .now + Self.findTimeout,
      knownPeers: configuration.knownPeers, decider: RefusingSendDecider(),
      events: track(entry.id, base: base))
    registerStop(entry.id) { await upload.cancel() }
    let failure = await delivery.send(batch: batch, text: nil)
    end(entry.id, failure)
  }

  /// How long finding and asking may take in one attempt (a person may be asked).
  static let findTimeout: Duration = .seconds(130)

  /// Marks `entry` delivering and makes its batch of what is left to deliver (files changed
  /// or gone since it was queued are marked so); nil when the attempt ends here.
  private func begin(_ entry: OutboxEntry) -> (OutboxEntry, SendBatch, UInt64)? {
    var items: [ResourceItem] = []
    guard
      let started = outbox.update(
        entry.id,
        { entry in
          guard case .queued = entry.state else { return false }
          entry.state = .delivering(since: Date())
          entry.attempts += 1
          items = OutboxFiles.deliverable(&entry)
          return true
        })
    else { return nil }
    let settled = started.files.filter { $0.status != .pending && $0.status != .failed }
    let base = settled.reduce(UInt64(0)) { $0 + $1.size }
    guard !items.isEmpty else {
      let delivered = settled.contains { [.stored, .identical, .skipped].contains($0.status) }
      end(
        entry.id,
        delivered
          ? nil
          : SendFailure(
            .nothingToSend,
            "nothing left to send: every file changed or went away since it was queued"))
      return nil
    }
    do {
      return (started, try SendBatch(entries: items, skipped: { _ in }), base)
    } catch {
      end(entry.id, error: error)
      return nil
    }
  }

  /// What the delivery of send `id` reports, kept on it (each file's verdict, progress) and
  /// passed on.
  private func track(_ id: String, base: UInt64) -> @Sendable (SendEvent) -> Void {
    { [outbox, report] event in
      switch event {
      case .file(_, let result):
        outbox.update(id, persist: false) { entry in
          Self.settle(&entry, path: result.path, status: result.status)
        }
      case .localSendFile(_, let file, let status):
        outbox.update(id, persist: false) { entry in
          Self.settle(&entry, path: file.path, status: status)
        }
      case .progress(_, let snapshot):
        outbox.update(id, persist: false) { entry in
          entry.bytes = base + UInt64(max(0, snapshot.bytes))
          return true
        }
      default:
        break
      }
      report(event)
    }
  }

  private static func settle(_ entry: inout OutboxEntry, path: String, status: FileStatus) -> Bool {
    guard let index = entry.files.firstIndex(where: { $0.path == path }) else { return false }
    entry.files[index].status =
      switch status {
      case .stored: .stored
      case .identical: .identical
      case .skipped: .skipped
      case .corrupt: .corrupt
      case .failed: .failed
      }
    return true
  }

  /// Send `id`'s attempt ended (`failure` nil: everything delivered): delivered, failed for
  /// good, cancelled, or queued again for the next time its peer is seen.
  private func end(_ id: String, _ failure: SendFailure?) {
    running.withLock { _ = $0.stops.removeValue(forKey: id) }
    let wasCancelled = cancelled.withLock { $0.remove(id) != nil }
    outbox.update(id) { entry in
      let now = Date()
      entry.bytes = entry.files.filter { $0.status != .pending && $0.status != .failed }
        .reduce(0) { $0 + $1.size }
      if wasCancelled {
        entry.state = .cancelled(at: now)
      } else if let failure {
        let problem = OutboxEntry.Problem(code: Self.code(failure.kind), message: failure.message)
        if Self.passes(failure.kind) && entry.attempts < Self.maximumAttempts {
          entry.state = .queued(retryAt: now.addingTimeInterval(Self.backoff(entry.attempts)))
        } else {
          entry.state = .failed(at: now, problem: problem)
        }
      } else if entry.files.contains(where: { $0.status == .changed || $0.status == .missing }) {
        let left = entry.files.filter { $0.status == .changed || $0.status == .missing }.count
        entry.state = .failed(
          at: now,
          problem: .init(
            code: "changed",
            message: "delivered, but for \(left) file(s) changed or gone since it was queued"))
      } else {
        entry.state = .delivered(at: now)
      }
      return true
    }
  }

  private func end(_ id: String, error: any Error) {
    end(id, error as? SendFailure ?? SendFailure(.cannotRead, "\(error)"))
  }

  private func registerStop(_ id: String, _ stop: @escaping @Sendable () async -> Void) {
    running.withLock { $0.stops[id] = stop }
  }

  /// Whether a failure of this kind may pass (the send waits for its peer again).
  static func passes(_ kind: SendFailure.Kind) -> Bool {
    switch kind {
    case .noPeer, .transferFailed, .invitationFailed, .batchChanged, .busy, .interrupted:
      true
    case .usage, .cannotRead, .invalidPath, .nothingToSend, .declined, .authentication,
      .keyChanged, .cancelled, .unreadable, .pin, .integrity:
      false
    }
  }

  /// The wait before a send tried `attempts` times is tried again: 1, 2, 4 … minutes, at
  /// most an hour.
  static func backoff(_ attempts: Int) -> TimeInterval {
    min(3600, 60 * pow(2, Double(max(0, attempts - 1))))
  }

  /// The `--json` error code for a failure of this kind (as `ferry send` gives it).
  static func code(_ kind: SendFailure.Kind) -> String {
    switch kind {
    case .noPeer: "no-peer"
    case .usage: "usage"
    case .cannotRead: "cannot-read"
    case .invalidPath: "invalid-path"
    case .nothingToSend: "empty"
    case .batchChanged: "cannot-read"
    case .declined: "declined"
    case .authentication: "authentication"
    case .keyChanged: "key-changed"
    case .invitationFailed: "invitation-failed"
    case .transferFailed: "transfer-failed"
    case .cancelled: "cancelled"
    case .interrupted: "interrupted"
    case .unreadable: "unreadable"
    case .busy: "busy"
    case .pin: "pin"
    case .integrity: "integrity"
    }
  }
}

/// The daemon's answers to what only a person sending could decide: a send goes only to the
/// key it was queued for (so a changed key is never asked about), and it shares no web page.
struct RefusingSendDecider: SendDecider {
  func sendDespiteKeyChange(to peer: PeerID, previous: Fingerprint, timeout: Duration) async
    -> Bool
  { false }

  func admit(_ request: WebShareServer.Request, until deadline: ContinuousClock.Instant) async
    -> Bool
  { false }
}
