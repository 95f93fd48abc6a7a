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
    /// Unicast DNS-SD domains browsed besides the local network.
    package let domains: [BrowseDomain]

    /// A configuration.
    package init(
      identity: Identity, name: String, serviceType: ServiceType, knownPeers: KnownPeers,
      domains: [BrowseDomain] = []
    ) {
      (self.identity, self.name, self.serviceType, self.knownPeers) = (
        identity, name, serviceType, knownPeers
      )
      self.domains = domains
    }
  }

  /// The most attempts a send gets.
  package static let maximumAttempts = 20
  /// The most misses (attempts nobody proved the key in) kept count of: the wait is an hour
  /// long well before.
  package static let maximumMisses = 10_000
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
  /// True once the daemon stops: no delivery starts, and those under way are queued again.
  let stopping = Mutex<Bool>(false)
  /// Sends whose receiver proved the queued key in the attempt under way (it was asked, or a
  /// LocalSend device accepted): only such an attempt counts toward ``maximumAttempts``.
  let proven = Mutex<Set<String>>([])
  /// When each Ferry peer (by fingerprint) was last heard of.
  private let heard = Mutex<[String: Date]>([:])
  /// The last announcements of each LocalSend device (by fingerprint, then address: at most
  /// 8 addresses for each of 256 keys). Anyone can announce a key: each address is tried,
  /// and only the device holding the key passes the pin.
  private let sightings = Mutex<[String: [String: (sighting: LocalSendSighting, at: Date)]]>(
    [:])
  /// The timer's sleep, which a new send cuts short (``poke()``), and whether one came while
  /// it was awake.
  private let timer = Mutex<Timer>(Timer())

  /// Where each peer (by fingerprint) mDNS does not see answered lately, at an address it was
  /// reached at before (``Courier+Remembered``).
  let routes = Mutex<[String: HostPort]>([:])

  /// The timer's state.
  private struct Timer {
    var nap: Task<Void, Never>?
    var poked = false
  }

  /// A peer came into sight or went out of it.
  package struct AroundChange: Sendable, Equatable {
    /// True: found; false: lost.
    package let found: Bool
    /// The name it announces.
    package let name: String
    /// Its key's fingerprint (hex), when it announces one.
    package let fingerprint: String?
    /// `ferry` or `localsend`.
    package let protocolName: String
  }

  /// What changes in the peers around (found, lost).
  let around: @Sendable (AroundChange) -> Void

  /// A courier for `outbox`, reporting what its deliveries do to `report` and the peers it
  /// finds and loses to `around`.
  package init(
    outbox: Outbox, configuration: Configuration,
    report: @escaping @Sendable (SendEvent) -> Void,
    around: @escaping @Sendable (AroundChange) -> Void = { _ in }
  ) {
    self.outbox = outbox
    self.configuration = configuration
    self.report = report
    self.around = around
  }

  /// Browses and delivers until the task is cancelled.
  package func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.browse() }
      group.addTask { await self.keepTime() }
      group.addTask { await self.probeRemembered() }
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
    let now = Date()
    let fresh = sightings.withLock { sightings -> Bool in
      let fresh =
        !(sightings[fingerprint]?.values.contains {
          now.timeIntervalSince($0.at) < Self.sightingLasts
        } ?? false)
      if sightings.count >= 256, sightings[fingerprint] == nil,
        let oldest = sightings.min(by: {
          ($0.value.values.map(\.at).max() ?? .distantPast)
            < ($1.value.values.map(\.at).max() ?? .distantPast)
        })?.key
      {
        sightings[oldest] = nil
      }
      var addresses = sightings[fingerprint] ?? [:]
      if addresses.count >= 8, addresses[sighting.address] == nil,
        let oldest = addresses.min(by: { $0.value.at < $1.value.at })?.key
      {
        addresses[oldest] = nil
      }
      addresses[sighting.address] = (sighting, now)
      sightings[fingerprint] = addresses
      return fresh
    }
    if fresh {
      around(
        AroundChange(
          found: true, name: sighting.device.alias, fingerprint: fingerprint,
          protocolName: "localsend"))
    }
    guard !outbox.due(for: fingerprint, carrier: .localsend).isEmpty else { return }
    start(fingerprint, carrier: .localsend)
  }

  /// Cancels send `id`: one queued ends now; one being delivered is stopped on both ends, and
  /// waited for (10 s at most). The send as it is then, nil when it is not kept.
  package func cancel(_ id: String) async -> OutboxEntry? {
    var delivering = false
    outbox.update(id) { entry in
      switch entry.state {
      case .queued:
        entry.state = .cancelled(at: Date())
        return true
      case .delivering:
        // Written down: the cancel holds should the daemon stop before the attempt ends.
        delivering = true
        entry.cancelRequested = true
        return true
      case .delivered, .failed, .cancelled, .expired:
        return false
      }
    }
    guard delivering else { return outbox.entry(id) }
    // Said first: a delivery that has not registered its stop yet sees it before it sends.
    cancelled.withLock { _ = $0.insert(id) }
    if let stop = running.withLock({ $0.stops[id] }) { await stop() }
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline, outbox.entry(id)?.state.ended == false {
      try? await Task.sleep(for: .milliseconds(100))
    }
    if outbox.entry(id)?.state.ended != false { cancelled.withLock { _ = $0.remove(id) } }
    return outbox.entry(id)
  }

  /// Stops every delivery under way on both ends (the daemon is stopping): each send is
  /// queued again, for its peer to resume what it staged at the next start.
  package func stopDeliveries() async {
    stopping.withLock { $0 = true }
    let stops = running.withLock { Array($0.stops.values) }
    await withTaskGroup(of: Void.self) { group in
      for stop in stops { group.addTask { await stop() } }
    }
  }

  /// Whether send `id` was cancelled while it was being delivered.
  func isCancelled(_ id: String) -> Bool {
    cancelled.withLock { $0.contains(id) }
  }

  // MARK: Looking for peers

  private func browse() async {
    var wait: Duration = .seconds(1)
    while !Task.isCancelled {
      do {
        let current = try Browser(
          serviceType: configuration.serviceType, domains: configuration.domains)
        browser.withLock { $0 = current }
        wait = .seconds(1)
        for try await event in current.events {
          switch event {
          case .found(let peer):
            around(
              AroundChange(
                found: true, name: peer.name, fingerprint: peer.info.fingerprint?.hexString,
                protocolName: "ferry"))
          case .lost(let peer):
            around(
              AroundChange(
                found: false, name: peer.name, fingerprint: peer.info.fingerprint?.hexString,
                protocolName: "ferry"))
          case .updated:
            break
          }
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
      // A peer whose task runs is busy even between two of its sends (the next is looked at
      // before it is marked under way).
      let next = outbox.expire(busy: running.withLock { $0.peers })
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
      // (``Outbox/expire(now:)`` gives only times to come: a send due already waits for its
      // peer to be seen, which wakes the courier by itself.)
      let until = min(next ?? .distantFuture, Date(timeIntervalSinceNow: 3600))
      let wait = max(1, until.timeIntervalSinceNow)
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
    return sightings.withLock { $0.values.flatMap(\.values) }
      .filter { now.timeIntervalSince($0.at) < Self.sightingLasts }
      .map { ($0.sighting, $0.at) }
  }

  /// The services advertising `fingerprint` now (anyone can advertise a key: each is tried,
  /// and only the peer holding it passes the pin).
  private func peers(_ fingerprint: String) -> [DiscoveredPeer] {
    browser.withLock { $0 }?.peers.filter { $0.info.fingerprint?.hexString == fingerprint } ?? []
  }

  func peer(_ fingerprint: String) -> DiscoveredPeer? { peers(fingerprint).first }

  /// The recent announcements of `fingerprint`: proven ones first, then the newest.
  private func sightings(_ fingerprint: String) -> [LocalSendSighting] {
    let now = Date()
    return sightings.withLock { $0[fingerprint] ?? [:] }.values
      .filter { now.timeIntervalSince($0.at) < Self.sightingLasts }
      .sorted { ($0.sighting.proven ? 1 : 0, $0.at) > ($1.sighting.proven ? 1 : 0, $1.at) }
      .map(\.sighting)
  }

  private func sighting(_ fingerprint: String) -> LocalSendSighting? {
    sightings(fingerprint).first
  }

  // MARK: Delivering

  /// Delivers, one after another, the sends due for the peer `fingerprint` by `carrier`,
  /// unless that is under way already.
  func start(_ fingerprint: String, carrier: OutboxEntry.Carrier) {
    let key = "\(carrier.rawValue):\(fingerprint)"
    guard running.withLock({ $0.peers.insert(key).inserted }) else { return }
    Task {
      while true {
        // Nothing due, or its peer gone: this task ends — deciding so under the same lock a
        // new start takes, so that a send queued meanwhile is not left waiting.
        let next = running.withLock { running -> OutboxEntry? in
          let entry = outbox.due(for: fingerprint, carrier: carrier).first
          let reachable =
            switch carrier {
            case .ferry: peer(fingerprint) != nil || route(fingerprint) != nil
            case .localsend: sighting(fingerprint) != nil
            }
          guard let entry, reachable, !stopping.withLock({ $0 }) else {
            running.peers.remove(key)
            return nil
          }
          return entry
        }
        guard let entry = next else { return }
        switch carrier {
        case .ferry:
          let seen = peers(fingerprint)
          if !seen.isEmpty, let browser = self.browser.withLock({ $0 }) {
            await deliver(entry, to: seen, browser: browser)
          } else if let address = route(fingerprint) {
            await deliver(entry, at: address)
          } else {
            continue
          }
        case .localsend:
          await deliver(localSend: entry, to: sightings(fingerprint))
        }
      }
    }
  }
}
