import Ferry
import Foundation
import Synchronization

/// The sends the daemon keeps: queued until their peer is seen, delivering, or ended (listed
/// for ``keepEnded`` after, then forgotten). Every change is written to the store
/// (``OutboxStore``) before it is reported or answered. At most ``maximumWaiting`` sends wait
/// at once, each of at most ``maximumFiles`` files. Any thread.
package final class Outbox: Sendable {
  /// What happened to a send, for the event stream and the notifications.
  package enum Event: Sendable {
    /// A send was queued.
    case queued(OutboxEntry)
    /// A delivery attempt starts (its peer was seen).
    case delivering(OutboxEntry)
    /// A send ended: delivered, failed, cancelled or expired.
    case ended(OutboxEntry)
    /// A file in the outbox's folder was not a send: moved to `path`.
    case corrupt(path: String, reason: String)
    /// The outbox could not be written (a change is kept in memory only).
    case unwritable(id: String, reason: String)
  }

  /// The most sends waiting (queued or delivering) at once.
  package static let maximumWaiting = 1000
  /// The most files (and empty folders) in one send.
  package static let maximumFiles = 10_000
  /// How long a send `when: now` waits for its peer.
  package static let nowWindow: Duration = .seconds(60)

  private let store: OutboxStore
  private let entries = Mutex<[String: OutboxEntry]>([:])
  /// How long an ended send stays listed.
  package let keepEnded: TimeInterval
  private let report: @Sendable (Event) -> Void

  /// The outbox stored in `folder`, listing ended sends for `keepEnded` seconds, reporting to
  /// `report`. Nothing is read until ``load()``.
  package init(
    folder: URL, keepEnded: TimeInterval, report: @escaping @Sendable (Event) -> Void
  ) {
    store = OutboxStore(folder: folder)
    self.keepEnded = keepEnded
    self.report = report
  }

  /// Reads the stored sends. A send that was delivering when the daemon stopped is queued
  /// again (its peer resumes what it staged), or ended and reported so (cancelled meanwhile,
  /// out of attempts); a file that is not a send is moved aside and reported.
  ///
  /// - Throws: When the folder exists and cannot be listed.
  package func load() throws {
    let loaded = try store.load()
    for (path, reason) in loaded.corrupt { report(.corrupt(path: path, reason: reason)) }
    let now = Date()
    var endedHere: [OutboxEntry] = []
    for var entry in loaded.entries {
      if entry.upload == true, !entry.state.ended {
        // A browser's files are read once, as they come: gone with the daemon that read them.
        entry.state = .failed(
          at: now,
          problem: .init(
            code: "interrupted",
            message: "the daemon stopped before the browser's files were all sent"))
        persist(entry)
        endedHere.append(entry)
      } else if case .delivering = entry.state {
        // Stopped in the middle of an attempt (a crash, SIGKILL): tried again — unless it
        // was cancelled meanwhile, or tried as often as any send is (a send that crashes the
        // daemon would loop).
        entry.state =
          entry.cancelRequested == true
          ? .cancelled(at: now)
          : entry.attempts >= Courier.maximumAttempts
            ? .failed(
              at: now,
              problem: .init(code: "transfer-failed", message: "its last attempt never ended"))
            : .queued(retryAt: nil)
        persist(entry)
        if entry.state.ended { endedHere.append(entry) }
      }
      if let ended = entry.state.endedAt, now.timeIntervalSince(ended) > keepEnded {
        store.remove(entry.id)
        continue
      }
      entries.withLock { $0[entry.id] = entry }
    }
    for entry in endedHere { report(.ended(entry)) }
  }

  /// Adds `entry` (queued), written to disk before it returns.
  ///
  /// - Throws: ``APIProblem`` when too many sends wait, or it cannot be written.
  package func add(_ entry: OutboxEntry) throws(APIProblem) {
    let (waiting, ended) = entries.withLock { entries in
      entries.values.reduce(into: (0, 0)) {
        $0 = $1.state.ended ? ($0.0, $0.1 + 1) : ($0.0 + 1, $0.1)
      }
    }
    // Ended sends are listed for a while, the newest 1000 at most.
    if ended >= Self.maximumWaiting { forgetOldestEnded() }
    guard waiting < Self.maximumWaiting else {
      throw APIProblem(
        429, "outbox-full",
        "\(Self.maximumWaiting) sends wait already: cancel some (ferry outbox cancel ID)")
    }
    do {
      try store.save(entry)
    } catch {
      throw APIProblem(
        500, "unwritable", "the outbox cannot be written (\(store.folder.path)): \(error)")
    }
    entries.withLock { $0[entry.id] = entry }
    report(.queued(entry))
  }

  /// Send `id`, if kept.
  package func entry(_ id: String) -> OutboxEntry? {
    entries.withLock { $0[id] }
  }

  /// Every send kept, newest first.
  package var all: [OutboxEntry] {
    entries.withLock { Array($0.values) }.sorted { $0.created > $1.created }
  }

  /// Changes send `id` with `change` (nothing when it is not kept, or `change` returns
  /// false), writes it (unless `persist` is false: progress, which the next write carries),
  /// and reports a new state; the send as it is now. Written under the lock: two changes of
  /// one send never reach the disk out of order.
  @discardableResult
  package func update(
    _ id: String, persist: Bool = true, _ change: (inout OutboxEntry) -> Bool
  ) -> OutboxEntry? {
    let (before, changed, failure) = entries.withLock {
      entries -> (OutboxEntry.State?, OutboxEntry?, String?) in
      guard var entry = entries[id] else { return (nil, nil, nil) }
      let before = entry.state
      guard change(&entry) else { return (nil, nil, nil) }
      entries[id] = entry
      guard persist else { return (before, entry, nil) }
      do {
        try store.save(entry)
        return (before, entry, nil)
      } catch {
        return (before, entry, "\(error)")
      }
    }
    guard let changed else { return nil }
    if let failure { report(.unwritable(id: id, reason: failure)) }
    guard before?.word != changed.state.word else { return changed }
    switch changed.state {
    case .delivering: report(.delivering(changed))
    case .delivered, .failed, .cancelled, .expired: report(.ended(changed))
    case .queued: break
    }
    return changed
  }

  /// Ends the sends whose time is up: expired (`when: seen`), or failed for want of their peer
  /// (`when: now`) — but for one whose peer is being delivered to (`busy`, and any send under
  /// way); forgets ended ones listed long enough. Returns when to look again (nil:
  /// nothing waits).
  package func expire(now: Date = Date(), busy working: Set<String> = []) -> Date? {
    // The peers being delivered to now (`carrier:fingerprint`: a send under way, or the
    // courier's task for that peer between two sends): a send for now waiting behind another
    // to its peer waits its turn (its peer is in sight), however long that takes.
    let busy = working.union(
      all.filter {
        if case .delivering = $0.state { return true }
        return false
      }.map { "\($0.carrier.rawValue):\($0.fingerprint)" })
    for entry in all where entry.expires <= now {
      guard case .queued = entry.state else { continue }
      if entry.when == .now, busy.contains("\(entry.carrier.rawValue):\(entry.fingerprint)") {
        continue
      }
      update(entry.id) { entry in
        // Only a send still waiting expires (one that began meanwhile is under way).
        guard case .queued = entry.state, entry.expires <= now else { return false }
        if entry.when == .now {
          // Why its last attempt failed, when it had one (nobody proved the key).
          entry.state = .failed(
            at: now,
            problem: entry.lastProblem
              ?? .init(
                code: "no-peer",
                message: "\(entry.to) was not seen within \(Self.nowWindow.components.seconds) s"
              ))
        } else {
          entry.state = .expired(at: now)
        }
        return true
      }
    }
    let forgotten = entries.withLock { entries -> [String] in
      let old = entries.values.filter {
        guard let ended = $0.state.endedAt else { return false }
        return now.timeIntervalSince(ended) > keepEnded
      }.map(\.id)
      for id in old { entries[id] = nil }
      return old
    }
    for id in forgotten { store.remove(id) }
    if entries.withLock({ $0.values.filter(\.state.ended).count }) > Self.maximumWaiting {
      forgetOldestEnded()
    }
    // Only times to come: a send due already waits for its peer to be seen (which wakes the
    // courier), and one under way ends by itself.
    return entries.withLock { entries in
      entries.values.flatMap { entry -> [Date] in
        switch entry.state {
        case .queued(let retryAt): [entry.expires] + (retryAt.map { [$0] } ?? [])
        case .delivering: []
        case .delivered(let at), .failed(let at, _), .cancelled(let at), .expired(let at):
          [at.addingTimeInterval(keepEnded)]
        }
      }.filter { $0 > now }.min()
    }
  }

  /// The queued sends for the peer with `fingerprint` (by `carrier`) that may be tried now.
  package func due(for fingerprint: String, carrier: OutboxEntry.Carrier, now: Date = Date())
    -> [OutboxEntry]
  {
    entries.withLock { entries in
      entries.values.filter { entry in
        guard entry.fingerprint == fingerprint, entry.carrier == carrier else { return false }
        guard case .queued(let retryAt) = entry.state else { return false }
        return retryAt.map { $0 <= now } ?? true
      }.sorted { $0.created < $1.created }
    }
  }

  /// The fingerprints with a send that may be tried now.
  package func dueFingerprints(now: Date = Date()) -> Set<String> {
    entries.withLock { entries in
      Set(
        entries.values.compactMap { entry in
          guard case .queued(let retryAt) = entry.state,
            retryAt.map({ $0 <= now }) ?? true
          else { return nil }
          return entry.fingerprint
        })
    }
  }

  /// How many sends are queued and delivering.
  package var counts: (queued: Int, delivering: Int) {
    entries.withLock { entries in
      entries.values.reduce(into: (0, 0)) { counts, entry in
        switch entry.state {
        case .queued: counts.0 += 1
        case .delivering: counts.1 += 1
        default: break
        }
      }
    }
  }

  /// Forgets the oldest tenth of the ended sends.
  private func forgetOldestEnded() {
    let old = entries.withLock { entries -> [String] in
      let ended = entries.values.compactMap { entry in entry.state.endedAt.map { (entry.id, $0) } }
        .sorted { $0.1 < $1.1 }
      let old = ended.prefix(max(1, ended.count / 10)).map(\.0)
      for id in old { entries[id] = nil }
      return old
    }
    for id in old { store.remove(id) }
  }

  private func persist(_ entry: OutboxEntry) {
    do {
      try store.save(entry)
    } catch {
      report(.unwritable(id: entry.id, reason: "\(error)"))
    }
  }
}
