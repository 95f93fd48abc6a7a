import Ferry
import FerryAgent
import FerryLocalSend
import Foundation
import Synchronization

/// Delivers the outbox: it browses for Ferry peers (avahi-daemon) and hears LocalSend
/// devices' announcements (``seen(_:)``), and when the peer of a queued send is seen — its key
/// proven in the TLS handshake, as for any send — delivers it with the resume, consent and
/// retry schedule of `ferry send`. A send that fails for a reason that may pass (the peer went
/// away, the link dropped) waits for the peer again, tried at most ``maximumAttempts`` times;
/// a decline, a wrong key or a PIN ends it. Sends to one peer go one after another. Nothing
/// runs while nothing is due: one timer waits for the next expiry or retry. Any thread.
package final class Courier: Sendable {
  /// Who this machine is, and how it looks for peers.
  package struct Configuration: Sendable {
    /// The identity sends are made with.
    package let identity: Identity
    /// The name peers see.
    package let name: String
    /// The DNS-SD service type browsed for Ferry peers.
    package let serviceType: ServiceType
    /// What this machine knows of keys.
    package let knownPeers: KnownPeers

    /// A configuration.
    package init(
      identity: Identity, name: String, serviceType: ServiceType, knownPeers: KnownPeers
    ) {
      (self.identity, self.name, self.serviceType, self.knownPeers) = (
        identity, name, serviceType, knownPeers
      )
    }
  }

  /// The most attempts a send gets.
  package static let maximumAttempts = 20
  /// How long a LocalSend device's announcement counts as seeing it.
  static let sightingLasts: TimeInterval = 120

  let outbox: Outbox
  let configuration: Configuration
  let report: @Sendable (SendEvent) -> Void
  private let browser = Mutex<Browser?>(nil)
  /// The delivery under way for each peer (by fingerprint), and its sends' stops.
  let running = Mutex<(peers: Set<String>, stops: [String: @Sendable () async -> Void])>(
    ([], [:]))
  /// Sends cancelled while they were being delivered.
  let cancelled = Mutex<Set<String>>([])
  /// When each Ferry peer (by fingerprint) was last heard of.
  private let heard = Mutex<[String: Date]>([:])
  /// The last announcement of each LocalSend device (by fingerprint), at most 256.
  private let sightings = Mutex<[String: (sighting: LocalSendSighting, at: Date)]>([:])
  /// The timer's sleep, which a new send cuts short (``poke()``), and whether one came while
  /// it was awake.
  private let timer = Mutex<Timer>(Timer())

  /// The timer's state.
  private struct Timer {
    var nap: Task<Void, Never>?
    var poked = false
  }

  /// A courier for `outbox`, reporting what its deliveries do to `report`.
  package init(
    outbox: Outbox, configuration: Configuration,
    report: @escaping @Sendable (SendEvent) -> Void
  ) {
    self.outbox = outbox
    self.configuration = configuration
    self.report = report
  }

  /// Browses and delivers until the task is cancelled.
  package func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.browse() }
      group.addTask { await self.keepTime() }
      await group.next()
      group.cancelAll()
    }
    browser.withLock { $0 }?.stop()
  }

  /// A send was queued: delivered at once if its peer is in sight.
  package func poke() {
    let nap = timer.withLock { timer -> Task<Void, Never>? in
      timer.poked = true
      return timer.nap
    }
    nap?.cancel()
  }

  /// A LocalSend device announced itself.
  package func seen(_ sighting: LocalSendSighting) {
    guard let key = try? Fingerprint(parsing: sighting.device.fingerprint) else { return }
    let fingerprint = key.hexString
    sightings.withLock { sightings in
      if sightings.count >= 256, sightings[fingerprint] == nil,
        let oldest = sightings.min(by: { $0.value.at < $1.value.at })?.key
      {
        sightings[oldest] = nil
      }
      sightings[fingerprint] = (sighting, Date())
    }
    guard !outbox.due(for: fingerprint, carrier: .localsend).isEmpty else { return }
    start(fingerprint, carrier: .localsend)
  }

  /// Cancels send `id`: one queued ends now; one being delivered is stopped on both ends
  /// first. The send as it ended, nil when it is not kept.
  package func cancel(_ id: String) async -> OutboxEntry? {
    let stop = running.withLock { $0.stops[id] }
    if let stop {
      cancelled.withLock { _ = $0.insert(id) }
      await stop()
    }
    outbox.update(id) { entry in
      guard !entry.state.ended else { return false }
      if case .delivering = entry.state, stop != nil { return false }
      entry.state = .cancelled(at: Date())
      return true
    }
    return outbox.entry(id)
  }

  // MARK: Looking for peers

  private func browse() async {
    var wait: Duration = .seconds(1)
    while !Task.isCancelled {
      do {
        let current = try Browser(serviceType: configuration.serviceType)
        browser.withLock { $0 = current }
        wait = .seconds(1)
        for try await event in current.events {
          switch event {
          case .found(let peer), .updated(let peer):
            if let key = peer.info.fingerprint?.hexString {
              heard.withLock { heard in
                if heard.count >= 1024 { heard.removeAll() }
                heard[key] = Date()
              }
            }
            if let key = peer.info.fingerprint?.hexString,
              !outbox.due(for: key, carrier: .ferry).isEmpty
            {
              start(key, carrier: .ferry)
            }
          case .lost:
            break
          }
        }
        current.stop()
      } catch {
        // avahi-daemon is not there (yet), or stopped browsing: tried again, less and less
        // often.
      }
      browser.withLock { $0 = nil }
      try? await Task.sleep(for: wait)
      wait = min(wait * 2, .seconds(60))
    }
  }

  /// Expires what is due and tries what may be tried again, then sleeps until the next of
  /// them (or a new send).
  private func keepTime() async {
    while !Task.isCancelled {
      let next = outbox.expire()
      for fingerprint in outbox.dueFingerprints() {
        if !outbox.due(for: fingerprint, carrier: .ferry).isEmpty, peer(fingerprint) != nil {
          start(fingerprint, carrier: .ferry)
        }
        if !outbox.due(for: fingerprint, carrier: .localsend).isEmpty,
          sighting(fingerprint) != nil
        {
          start(fingerprint, carrier: .localsend)
        }
      }
      let until = min(next ?? .distantFuture, Date(timeIntervalSinceNow: 3600))
      let wait = max(0.05, until.timeIntervalSinceNow)
      // Whichever comes first: the time, or a poke (which cancels the sleep).
      let nap = Task<Void, Never> { try? await Task.sleep(for: .seconds(wait)) }
      let poked = timer.withLock { timer -> Bool in
        let poked = timer.poked
        timer.poked = false
        timer.nap = poked ? nil : nap
        return poked
      }
      if poked { nap.cancel() }
      await withTaskCancellationHandler {
        await nap.value
      } onCancel: {
        nap.cancel()
      }
      timer.withLock { $0.nap = nil }
    }
  }

  /// The Ferry peers around now, and when each was last heard of.
  package var ferryPeers: [(peer: DiscoveredPeer, lastSeen: Date)] {
    let peers = browser.withLock { $0 }?.peers ?? []
    let heard = self.heard.withLock { $0 }
    return peers.map { peer in
      (peer, peer.info.fingerprint.flatMap { heard[$0.hexString] } ?? Date())
    }
  }

  /// The LocalSend devices heard lately, and when.
  package var localSendDevices: [(sighting: LocalSendSighting, lastSeen: Date)] {
    let now = Date()
    return sightings.withLock { Array($0.values) }
      .filter { now.timeIntervalSince($0.at) < Self.sightingLasts }
      .map { ($0.sighting, $0.at) }
  }

  private func peer(_ fingerprint: String) -> DiscoveredPeer? {
    browser.withLock { $0 }?.peers.first { $0.info.fingerprint?.hexString == fingerprint }
  }

  private func sighting(_ fingerprint: String) -> LocalSendSighting? {
    sightings.withLock { sightings in
      guard let seen = sightings[fingerprint],
        Date().timeIntervalSince(seen.at) < Self.sightingLasts
      else { return nil }
      return seen.sighting
    }
  }

  // MARK: Delivering

  /// Delivers, one after another, the sends due for the peer `fingerprint` by `carrier`,
  /// unless that is under way already.
  private func start(_ fingerprint: String, carrier: OutboxEntry.Carrier) {
    let key = "\(carrier.rawValue):\(fingerprint)"
    guard running.withLock({ $0.peers.insert(key).inserted }) else { return }
    Task {
      defer { _ = running.withLock { $0.peers.remove(key) } }
      while let entry = outbox.due(for: fingerprint, carrier: carrier).first {
        switch carrier {
        case .ferry:
          guard let peer = peer(fingerprint), let browser = browser.withLock({ $0 }) else {
            return
          }
          await deliver(entry) { session, batch, delivery in
            await delivery.send(to: peer, browser: browser, pinned: true)
          }
        case .localsend:
          guard let sighting = sighting(fingerprint) else { return }
          await deliver(localSend: entry, to: sighting)
        }
      }
    }
  }
}
