import Dispatch
import Ferry
import Foundation
import Synchronization

/// Finds peers advertising a service type and invites them, as MultipeerConnectivity's
/// `MCNearbyServiceBrowser`: a Ferry ``Browser`` (avahi-daemon) behind Apple's names.
///
/// Start, stop and start again work (apps restart browsing when a peer is lost); after a
/// start, every peer present is found again. This peer itself is never reported. A peer found
/// stays invitable after browsing stops (apps stop browsing as soon as they find their peer,
/// then invite it): its last known addresses are kept until it is reported lost, or for five
/// minutes after the stop. Delegate calls arrive on the browser's own serial queue; once
/// ``stopBrowsingForPeers()`` returns, no found or lost peer is reported (bar a call already
/// under way). The methods can be called from any thread, delegate calls included.
open class MCNearbyServiceBrowser: NSObject, @unchecked Sendable {
  /// This peer.
  public let myPeerID: MCPeerID
  /// The service type, as given.
  public let serviceType: String

  /// How long a peer found stays invitable once browsing stops (when it was not reported
  /// lost before).
  static let rememberedFor: Duration = .seconds(300)

  private let type: ServiceType
  private let queue: DispatchQueue
  private let state = Mutex(State())

  private struct State {
    var delegate: WeakReference<any MCNearbyServiceBrowserDelegate>?
    var browser: Browser?
    /// The run under way: reading the browser's events; nil when stopped.
    var run: Task<Void, Never>?
    /// Counts runs: what an earlier run reports late is dropped.
    var generation: UInt64 = 0
    /// Peers found and not lost in this run, by fingerprint, as the delegate knows them.
    var found: [Fingerprint: MCPeerID] = [:]
    /// Of those, the ones the delegate was told of (the others came while it had none).
    var told: Set<Fingerprint> = []
    /// Where each peer found lately was last seen: whom ``invitePeer`` reaches.
    var whereabouts: [Fingerprint: Whereabouts] = [:]

    /// Whether `generation` is the run under way.
    func isCurrent(_ generation: UInt64) -> Bool {
      run != nil && self.generation == generation
    }

    /// Forgets the whereabouts whose time ran out by `now`.
    mutating func forgetExpired(_ now: ContinuousClock.Instant) {
      for (fingerprint, entry) in whereabouts {
        if let deadline = entry.forgottenAt, deadline <= now { whereabouts[fingerprint] = nil }
      }
    }
  }

  /// A peer's last known service record, and when it is forgotten.
  private struct Whereabouts {
    var peer: DiscoveredPeer
    /// Nil while browsing finds the peer; set when browsing stops.
    var forgottenAt: ContinuousClock.Instant?
  }

  /// The delegate (held weakly). Any thread, before or after ``startBrowsingForPeers()``:
  /// peers found while there was none are reported to the one set next.
  public var delegate: (any MCNearbyServiceBrowserDelegate)? {
    get { state.withLock { $0.delegate }?.object }
    set {
      let reference = newValue.map { WeakReference($0) }
      let (generation, untold) = state.withLock {
        state -> (UInt64, [(MCPeerID, [String: String]?)]) in
        state.delegate = reference
        guard reference != nil, state.run != nil else { return (state.generation, []) }
        var untold: [(MCPeerID, [String: String]?)] = []
        for (fingerprint, object) in state.found where !state.told.contains(fingerprint) {
          untold.append((object, state.whereabouts[fingerprint].flatMap { Self.info(of: $0.peer) }))
        }
        return (state.generation, untold)
      }
      guard !untold.isEmpty else { return }
      queue.async { [self] in
        for (object, info) in untold { tellFound(object, info: info, run: generation) }
      }
    }
  }

  /// Prepares a browser; nothing happens until ``startBrowsingForPeers()``.
  ///
  /// Traps, as Apple's raises an exception, when `serviceType` is not 1–15 ASCII letters,
  /// digits and single inner hyphens with a letter.
  public init(peer myPeerID: MCPeerID, serviceType: String) {
    type = ServiceTypeCheck.validated(serviceType, by: "MCNearbyServiceBrowser")
    self.myPeerID = myPeerID
    self.serviceType = serviceType
    queue = DispatchQueue(label: "FerryMultipeer.MCNearbyServiceBrowser.\(serviceType)")
    super.init()
  }

  deinit {
    stopBrowsingForPeers()
  }

  /// Starts browsing; does nothing while browsing. Failures reach
  /// `browser(_:didNotStartBrowsingForPeers:)`.
  open func startBrowsingForPeers() {
    let browser: Browser
    do {
      let existing = state.withLock { state -> Browser? in
        state.run == nil ? state.browser : nil
      }
      if let existing {
        try existing.start()
        browser = existing
      } else {
        guard state.withLock({ $0.run == nil }) else { return }
        browser = try Browser(serviceType: type)
      }
    } catch {
      report(MCError(error))
      return
    }
    let this = WeakReference(self)
    let mine = myPeerID.ferryPeer.fingerprint
    let events = browser.events
    state.withLock { state in
      guard state.run == nil else { return }
      state.generation += 1
      let generation = state.generation
      state.browser = browser
      state.found = [:]
      state.told = []
      state.run = Task {
        do {
          for try await event in events {
            guard let peer = event.peer.peerID, peer.fingerprint != mine else { continue }
            this.object?.handle(event, peer: peer, run: generation)
          }
        } catch {
          if !Task.isCancelled { this.object?.browsingFailed(error, run: generation) }
        }
      }
    }
  }

  /// Stops browsing: no found or lost peer is reported after it. The peers found stay
  /// invitable for five minutes (unless browsing again reports them lost);
  /// ``startBrowsingForPeers()`` starts again.
  open func stopBrowsingForPeers() {
    let now = ContinuousClock.now
    let (run, browser) = state.withLock { state in
      defer {
        state.run = nil
        state.found = [:]
        state.told = []
        state.forgetExpired(now)
        for (fingerprint, entry) in state.whereabouts where entry.forgottenAt == nil {
          state.whereabouts[fingerprint]?.forgottenAt = now + Self.rememberedFor
        }
      }
      return (state.run, state.browser)
    }
    run?.cancel()
    browser?.stop()
  }

  /// Invites `peerID`, a peer this browser found (browsing since or not, within five minutes
  /// of a stop), into `session`, sending `context` (at most 64 KiB) and waiting up to
  /// `timeout` seconds (30 when 0 or less, at most 120) for its answer. The session's delegate
  /// hears `connecting`, then `connected`, or `notConnected` when the peer declines, does not
  /// answer in time, cannot be reached, or is not one this browser found. Any thread.
  open func invitePeer(
    _ peerID: MCPeerID, to session: MCSession, withContext context: Data?,
    timeout: TimeInterval
  ) {
    let fingerprint = peerID.ferryPeer.fingerprint
    let now = ContinuousClock.now
    let (discovered, browser) = state.withLock { state in
      state.forgetExpired(now)
      return (state.whereabouts[fingerprint]?.peer, state.browser)
    }
    let seconds = timeout > 0 ? min(timeout, 120) : 30
    let context = context ?? Data()
    let ferry = session.ferrySession
    session.attempt(with: peerID, tracked: true) {
      guard let discovered, browser != nil else {
        throw MCError(.notConnected, "\(peerID.displayName) was not found by this browser")
      }
      guard let fingerprint = discovered.info.fingerprint else {
        throw MCError(.notConnected, "\(peerID.displayName) advertises no fingerprint")
      }
      _ = try await ferry.inviteKeepingConnected(
        endpoints: discovered.addresses.map { ($0.ip, Int(discovered.port)) },
        expecting: fingerprint, context: [UInt8](context),
        timeout: .milliseconds(Int64(seconds * 1000)))
    }
  }

  private func report(_ error: MCError) {
    queue.async { [self] in
      delegate?.browser(self, didNotStartBrowsingForPeers: error)
    }
  }

  /// Run `generation` ended with `error`: browsing stopped, and a later start tries again.
  private func browsingFailed(_ error: any Error, run generation: UInt64) {
    guard state.withLock({ $0.isCurrent(generation) }) else { return }
    stopBrowsingForPeers()
    report(MCError(.unavailable, "\(error)", underlying: error))
  }

  /// The discovery info the delegate gets for `peer`: nil when it publishes none.
  private static func info(of peer: DiscoveredPeer) -> [String: String]? {
    peer.info.values.isEmpty ? nil : peer.info.values
  }

  /// A found, updated or lost peer of run `generation` (on the run's task).
  private func handle(_ event: BrowserEvent, peer: PeerID, run generation: UInt64) {
    switch event {
    case .found(let discovered), .updated(let discovered):
      let object = state.withLock { state -> MCPeerID? in
        guard state.isCurrent(generation) else { return nil }
        state.whereabouts[peer.fingerprint] = Whereabouts(peer: discovered, forgottenAt: nil)
        guard state.found[peer.fingerprint] == nil else { return nil }
        let object = MCPeerID(remote: peer)
        state.found[peer.fingerprint] = object
        return object
      }
      guard let object else { return }
      let info = Self.info(of: discovered)
      queue.async { [self] in
        tellFound(object, info: info, run: generation)
      }
    case .lost:
      let object = state.withLock { state -> MCPeerID? in
        guard state.isCurrent(generation) else { return nil }
        state.whereabouts[peer.fingerprint] = nil
        return state.found.removeValue(forKey: peer.fingerprint)
      }
      guard let object else { return }
      queue.async { [self] in
        tellLost(object, run: generation)
      }
    }
  }

  /// Tells the delegate `object` was found (on the queue, no lock held): unless the run ended,
  /// the peer was lost meanwhile, or the delegate was told already. With no delegate, the next
  /// one set is told.
  private func tellFound(_ object: MCPeerID, info: [String: String]?, run generation: UInt64) {
    let fingerprint = object.ferryPeer.fingerprint
    let delegate = state.withLock { state -> (any MCNearbyServiceBrowserDelegate)? in
      guard state.isCurrent(generation), state.found[fingerprint] === object,
        !state.told.contains(fingerprint), let delegate = state.delegate?.object
      else { return nil }
      state.told.insert(fingerprint)
      return delegate
    }
    delegate?.browser(self, foundPeer: object, withDiscoveryInfo: info)
  }

  /// Tells the delegate `object` was lost (on the queue, no lock held), if it was told the
  /// peer was found.
  private func tellLost(_ object: MCPeerID, run generation: UInt64) {
    let fingerprint = object.ferryPeer.fingerprint
    let delegate = state.withLock { state -> (any MCNearbyServiceBrowserDelegate)? in
      guard state.isCurrent(generation), state.told.remove(fingerprint) != nil else {
        return nil
      }
      return state.delegate?.object
    }
    delegate?.browser(self, lostPeer: object)
  }
}
