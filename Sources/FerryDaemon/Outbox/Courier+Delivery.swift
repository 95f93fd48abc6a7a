import Ferry
import FerryAgent
import FerryLocalSend
import Foundation

extension Courier {
  /// Delivers `entry` to the Ferry peer holding its key: each of `peers` (the services
  /// advertising the key) in turn, the key pinned in each handshake, past one that fails the
  /// pin or does not answer (anyone can advertise a key) — each with a deadline of its own,
  /// so that one that stalls does not use up the holder's time.
  func deliver(_ entry: OutboxEntry, to peers: [DiscoveredPeer], browser: Browser) async {
    guard let (entry, batch, base) = await begin(entry) else { return }
    let session: Session
    do {
      session = try Session(
        identity: configuration.identity, displayName: configuration.name, accepting: [])
    } catch {
      return end(entry.id, SendFailure(.usage, "\(error)"))
    }
    // The list may have emptied since the peer was seen (a goodbye): nothing was sent.
    var failure: SendFailure? = SendFailure(.noPeer, "\(entry.to) went away")
    for peer in peers {
      let delivery = FerryDelivery(
        session: session, batch: batch, summary: batch.summary,
        deadline: .now + Self.findTimeout, retry: RetryPolicy(retryFor: .seconds(60)),
        checksum: .xxh3, knownPeers: configuration.knownPeers, decider: RefusingSendDecider(),
        events: track(entry.id, base: base))
      registerStop(entry.id) { _ = await delivery.interrupt() }
      // Cancelled, or the daemon stopping, before its stop was there to call: nothing is sent.
      if let halted = halted(entry.id) {
        failure = halted
        break
      }
      failure = await delivery.send(to: peer, browser: browser, pinned: entry.byKey)
      guard let kind = failure?.kind, kind == .authentication || kind == .noPeer else { break }
    }
    await session.closeAndWait(timeout: .seconds(1))
    end(entry.id, failure)
  }

  /// Why send `id` must not go on: cancelled, or the daemon stopping; nil when it may.
  private func halted(_ id: String) -> SendFailure? {
    if isCancelled(id) { return SendFailure(.interrupted, "cancelled") }
    if stopping.withLock({ $0 }) { return SendFailure(.interrupted, "the daemon stopped") }
    return nil
  }

  /// Delivers `entry` to the LocalSend device announcing its key: at each address it was
  /// announced from in turn (proven ones first), the key pinned in each handshake — an
  /// address where another device answers fails the pin, and the next is tried.
  func deliver(localSend entry: OutboxEntry, to sightings: [LocalSendSighting]) async {
    guard let (entry, batch, base) = await begin(entry) else { return }
    guard let key = try? Fingerprint(parsing: entry.fingerprint) else {
      return end(entry.id, SendFailure(.authentication, "the send's key is not a fingerprint"))
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
    registerStop(entry.id) { await upload.cancel() }
    var failure: SendFailure? = SendFailure(.noPeer, "the device was not heard from lately")
    // Plain HTTP proves nothing: such an announcement is not tried (another may be the device).
    for sighting in sightings where sighting.device.usesTLS {
      if let halted = halted(entry.id) {
        failure = halted
        break
      }
      let target = LocalSendTarget(
        host: sighting.address,
        port: sighting.device.port ?? Int(LocalSendProtocol.defaultPort), fingerprint: key)
      let delivery = LocalSendDelivery(
        to: target, device: sighting.device, pinned: entry.byKey, upload: upload, pin: nil,
        retry: RetryPolicy(retryFor: .seconds(60)), deadline: .now + Self.findTimeout,
        knownPeers: configuration.knownPeers, decider: RefusingSendDecider(),
        events: track(entry.id, base: base))
      let settledBefore = settledCount(entry.id)
      failure = await delivery.send(batch: batch, text: nil)
      // Another device at that address (its certificate is not the key: the request fails),
      // or nobody: the next address may be the device's — unless files went to this one
      // (the batch would be offered again in full: a second copy of what it stored).
      guard let kind = failure?.kind, [.authentication, .noPeer, .transferFailed].contains(kind),
        settledCount(entry.id) == settledBefore
      else { break }
    }
    end(entry.id, failure)
  }

  /// How many of send `id`'s files have a verdict.
  private func settledCount(_ id: String) -> Int {
    outbox.entry(id)?.files.count { $0.status != .pending } ?? 0
  }

  /// How long finding and asking may take in one attempt (a person may be asked).
  static let findTimeout: Duration = .seconds(130)

  /// Marks `entry` delivering and makes its batch of what is left to deliver (files changed
  /// or gone since it was queued are marked so); nil when the attempt ends here. The files
  /// are looked at off the daemon's tasks and outside the outbox's lock (a hung mount holds
  /// this send only).
  private func begin(_ entry: OutboxEntry) async -> (OutboxEntry, SendBatch, UInt64)? {
    let looked = try? await OutboxFiles.offThread { () throws(APIProblem) in
      var copy = entry
      let items = OutboxFiles.deliverable(&copy)
      return (copy.files, items)
    }
    guard let (files, items) = looked else { return nil }
    guard
      let started = outbox.update(
        entry.id,
        { current in
          // Only from the state it was read in: a cancel or an expiry meanwhile wins.
          guard case .queued = current.state, current.files.count == files.count else {
            return false
          }
          current.state = .delivering(since: Date())
          current.attempts += 1
          current.files = files
          return true
        })
    else { return nil }
    let settled = started.files.filter { $0.status != .pending && $0.status != .failed }
    let base = settled.reduce(UInt64(0)) { $0 &+ $1.size }
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
      case .foldersLeftOut:
        // LocalSend has no folders: its empty ones are left out, said once.
        outbox.update(id, persist: false) { entry in
          for index in entry.files.indices
          where entry.files[index].folder && entry.files[index].status == .pending {
            entry.files[index].status = .skipped
          }
          return true
        }
      case .localSendFile(_, let file, let status):
        // Written at once: a LocalSend app has no resume, and a daemon killed before the
        // attempt's end must not offer it again what it stored.
        outbox.update(id) { entry in
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
    let cancelledHere = cancelled.withLock { $0.remove(id) != nil }
    outbox.update(id) { entry in
      // Only an attempt under way ends here (an expiry or a cancel may have ended it first).
      guard case .delivering = entry.state else { return false }
      let wasCancelled = cancelledHere || entry.cancelRequested == true
      let now = Date()
      entry.bytes = entry.files.filter { $0.status != .pending && $0.status != .failed }
        .reduce(0) { $0 &+ $1.size }
      // Nobody proved the key (a spoofed announcement, a peer gone), or the daemon stopped:
      // not an attempt the peer had.
      let unproven = failure.map { [.authentication, .noPeer].contains($0.kind) } ?? false
      // (A stop may surface as any failure: a LocalSend upload cut off is `transferFailed`.)
      let stopped = stopping.withLock { $0 } && failure != nil
      if (unproven || stopped) && !wasCancelled { entry.attempts = max(0, entry.attempts - 1) }
      if wasCancelled && failure != nil {
        entry.state = .cancelled(at: now)
      } else if stopped {
        // Resumed from what the peer staged at the next start.
        entry.state = .queued(retryAt: nil)
      } else if let failure {
        let problem = OutboxEntry.Problem(code: Self.code(failure.kind), message: failure.message)
        if unproven && entry.when == .now {
          // A send for now waits out its window (``Outbox/nowWindow``) for the key's holder.
          entry.state = .queued(retryAt: now.addingTimeInterval(5))
        } else if Self.passes(failure.kind) && entry.attempts < Self.maximumAttempts
          && entry.when == .seen
        {
          // A send for now is tried once: its peer was there, and did not take it.
          entry.state = .queued(retryAt: now.addingTimeInterval(Self.backoff(entry.attempts)))
        } else {
          entry.state = .failed(at: now, problem: problem)
        }
      } else {
        // Delivered: what changed or went away since it was queued is in its files' verdicts
        // (`changed`, `missing`) and its send-ended event, not sent.
        entry.state = .delivered(at: now)
      }
      return true
    }
    // The timer sleeps until the next time it knew of: a retry set here may come sooner (a
    // peer that stays in sight is not "found" again to wake it).
    poke()
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
    // A pin that failed: whoever answered was not the key's holder (anyone can advertise a
    // key); the holder may be seen later.
    case .noPeer, .transferFailed, .invitationFailed, .batchChanged, .busy, .interrupted,
      .authentication:
      true
    case .usage, .cannotRead, .invalidPath, .nothingToSend, .declined, .keyChanged, .cancelled,
      .unreadable, .pin, .integrity:
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
