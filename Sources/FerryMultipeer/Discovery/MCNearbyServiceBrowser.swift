import Dispatch
import Ferry
import Foundation
import Synchronization

/// Finds peers advertising a service type and invites them, as MultipeerConnectivity's
/// `MCNearbyServiceBrowser`: a Ferry ``Browser`` (avahi-daemon) behind Apple's names.
///
/// Start, stop and start again work (apps restart browsing when a peer is lost); after a
/// start, every peer present is found again. This peer itself is never reported. Delegate
/// calls arrive on the browser's own serial queue; the methods can be called from any thread.
open class MCNearbyServiceBrowser: NSObject, @unchecked Sendable {
  /// This peer.
  public let myPeerID: MCPeerID
  /// The service type, as given.
  public let serviceType: String

  private let type: ServiceType
  private let queue: DispatchQueue
  private let state = Mutex(State())

  private struct State {
    var delegate: WeakReference<any MCNearbyServiceBrowserDelegate>?
    var browser: Browser?
    /// The run under way: reading the browser's events.
    var run: Task<Void, Never>?
    /// Peers found and not lost in this run, by fingerprint: whom ``invitePeer`` reaches.
    var found: [Fingerprint: (object: MCPeerID, peer: DiscoveredPeer)] = [:]
  }

  /// The delegate (held weakly). Any thread.
  public var delegate: (any MCNearbyServiceBrowserDelegate)? {
    get { state.withLock { $0.delegate }?.object }
    set {
      let reference = newValue.map { WeakReference($0) }
      state.withLock { $0.delegate = reference }
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
      state.browser = browser
      state.found = [:]
      state.run = Task {
        do {
          for try await event in events {
            guard let peer = event.peer.peerID, peer.fingerprint != mine else { continue }
            this.object?.handle(event, peer: peer)
          }
        } catch {
          if !Task.isCancelled {
            // Browsing stopped: a later start tries again.
            this.object?.stopBrowsingForPeers()
            this.object?.report(MCError(.unavailable, "\(error)", underlying: error))
          }
        }
      }
    }
  }

  /// Stops browsing (no lost-peer calls follow); ``startBrowsingForPeers()`` starts again.
  open func stopBrowsingForPeers() {
    let (run, browser) = state.withLock { state in
      defer {
        state.run = nil
        state.found = [:]
      }
      return (state.run, state.browser)
    }
    run?.cancel()
    browser?.stop()
  }

  /// Invites `peerID`, a peer this browser found, into `session`, sending `context` (at most
  /// 64 KiB) and waiting up to `timeout` seconds (30 when 0 or less, at most 120) for its
  /// answer. The session's delegate hears `connecting`, then `connected`, or `notConnected`
  /// when the peer declines, does not answer in time or cannot be reached.
  open func invitePeer(
    _ peerID: MCPeerID, to session: MCSession, withContext context: Data?,
    timeout: TimeInterval
  ) {
    let discovered = state.withLock { $0.found[peerID.ferryPeer.fingerprint]?.peer }
    let browser = state.withLock { $0.browser }
    let seconds = timeout > 0 ? min(timeout, 120) : 30
    let context = context ?? Data()
    let ferry = session.ferrySession
    let task = session.attempt(with: peerID) {
      guard let discovered, let browser else {
        throw MCError(.notConnected, "\(peerID.displayName) was not found by this browser")
      }
      _ = try await browser.invite(
        discovered, to: ferry, context: context, timeout: .milliseconds(Int64(seconds * 1000)))
    }
    session.track(task, for: peerID)
  }

  private func report(_ error: MCError) {
    queue.async { [self] in
      delegate?.browser(self, didNotStartBrowsingForPeers: error)
    }
  }

  /// A found, updated or lost peer (on the run's task).
  private func handle(_ event: BrowserEvent, peer: PeerID) {
    switch event {
    case .found(let discovered), .updated(let discovered):
      let (object, isNew) = state.withLock { state in
        let existing = state.found[peer.fingerprint]?.object
        let object = existing ?? MCPeerID(remote: peer)
        state.found[peer.fingerprint] = (object, discovered)
        return (object, existing == nil)
      }
      guard isNew else { return }
      let info = discovered.info.values.isEmpty ? nil : discovered.info.values
      queue.async { [self] in
        delegate?.browser(self, foundPeer: object, withDiscoveryInfo: info)
      }
    case .lost:
      let object = state.withLock { state in
        state.found.removeValue(forKey: peer.fingerprint)?.object
      }
      guard let object else { return }
      queue.async { [self] in
        delegate?.browser(self, lostPeer: object)
      }
    }
  }
}
