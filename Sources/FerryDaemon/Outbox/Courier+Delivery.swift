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
    guard let session = session(for: entry.id) else { return }
    // The list may have emptied since the peer was seen (a goodbye): nothing was sent.
    var failure: SendFailure? = SendFailure(.noPeer, "\(entry.to) went away")
    // In a random order: whoever announces the key under names that sort first does not go
    // first every time.
    for peer in peers.shuffled() {
      let delivery = delivery(of: entry.id, batch, base: base, over: session)
      // Cancelled, or the daemon stopping, before its stop was there to call: nothing is sent.
      if let halted = halted(entry.id) {
        failure = halted
        break
      }
      failure = await delivery.send(to: peer, browser: browser, pinned: entry.byKey)
      // Past a service that failed the pin or did not answer — not past the holder, once it
      // was asked (its person is not asked twice in one attempt).
      guard let kind = failure?.kind, kind == .authentication || kind == .noPeer,
        !proven.withLock({ $0.contains(entry.id) })
      else { break }
    }
    await session.closeAndWait(timeout: .seconds(1))
    end(entry.id, failure)
  }

  /// Delivers `entry` at `address`, where its receiver was reached before and answers now
  /// (mDNS does not see it: another subnet): its key pinned in the handshake. An address where
  /// another key answers is forgotten; one that does not answer any more is no longer tried.
  func deliver(_ entry: OutboxEntry, at address: HostPort) async {
    guard let (entry, batch, base) = await begin(entry) else { return }
    guard let key = try? Fingerprint(parsing: entry.fingerprint) else {
      return end(entry.id, SendFailure(.authentication, "the send's key is not a fingerprint"))
    }
    guard let session = session(for: entry.id) else { return }
    let delivery = delivery(of: entry.id, batch, base: base, over: session)
    var failure: SendFailure?
    if let halted = halted(entry.id) {
      failure = halted
    } else {
      failure = await delivery.send(
        toAddress: address.description, host: address.host, port: address.port,
        to: (entry.to, .fingerprint(key)))
    }
    if let kind = failure?.kind, [.authentication, .noPeer].contains(kind) {
      forgetRoute(entry.fingerprint)
      if kind == .authentication {
        _ = try? configuration.knownPeers.forgetAddress(address.description, of: key)
      }
    }
    await session.closeAndWait(timeout: .seconds(1))
    end(entry.id, failure)
  }

  /// The session an attempt at send `id` delivers over; nil when none could be made (the
  /// attempt is then ended).
  private func session(for id: String) -> Session? {
    do {
      return try Session(
        identity: configuration.identity, displayName: configuration.name, accepting: [])
    } catch {
      end(id, SendFailure(.usage, "\(error)"))
      return nil
    }
  }

  /// One Ferry delivery of send `id`'s `batch` over `session` (what was settled before counts
  /// from `base`), stopped by a cancel or the daemon's stop.
  private func delivery(of id: String, _ batch: SendBatch, base: UInt64, over session: Session)
    -> FerryDelivery
  {
    let delivery = FerryDelivery(
      session: session, batch: batch, summary: batch.summary,
      deadline: .now + Self.findTimeout, retry: RetryPolicy(retryFor: .seconds(60)),
      checksum: .xxh3, knownPeers: configuration.knownPeers, decider: RefusingSendDecider(),
      events: track(id, base: base))
    registerStop(id) { _ = await delivery.interrupt() }
    return delivery
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
      failure = await delivery.send(batch: batch, text: nil)
      // Another device at that address (its certificate is not the key: the request fails),
      // or nobody: the next address may be the device's — unless the device here accepted
      // the session (offered again in full elsewhere, what it stored could be stored twice).
      guard let kind = failure?.kind, [.authentication, .noPeer, .transferFailed].contains(kind),
        !proven.withLock({ $0.contains(entry.id) })
      else { break }
    }
    end(entry.id, failure)
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
    // A fresh attempt: nobody has proved the key in it yet.
    proven.withLock { _ = $0.remove(entry.id) }
    let base = started.settledBytes
    guard !items.isEmpty else {
      let delivered = started.files.contains {
        [.stored, .identical, .skipped].contains($0.status)
      }
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
    { [outbox, report, self] event in
      switch event {
      case .asked, .accepted, .acceptedLocalSend:
        // The receiver proved the queued key in its TLS handshake (the key is pinned), and
        // was asked: this attempt counts.
        self.proven.withLock { _ = $0.insert(id) }
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
    let cancelledHere = cancelled.withLock { $0.remove(id) != nil }
    let provedKey = proven.withLock { $0.remove(id) != nil }
    let stopping = stopping.withLock { $0 }
    outbox.update(id) { entry in
      AttemptEnding.endAttempt(
        &entry, failure: failure, provedKey: provedKey, cancelled: cancelledHere,
        stopping: stopping, now: Date())
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
