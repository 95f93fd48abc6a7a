import Dispatch
import Ferry
import Foundation
import Synchronization

/// Publishes this peer on the local network and receives invitations, as MultipeerConnectivity's
/// `MCNearbyServiceAdvertiser`: a Ferry ``Advertiser`` (avahi-daemon and a TLS listener)
/// behind Apple's names.
///
/// Start, stop and start again work; each start publishes again on the same port. Delegate
/// calls arrive on the advertiser's own serial queue; the methods can be called from any
/// thread, delegate calls included. An invitation handed to the delegate stays answerable
/// after ``stopAdvertisingPeer()`` (and after the advertiser is released): stopping inside
/// `advertiser(_:didReceiveInvitationFromPeer:withContext:invitationHandler:)`, before or
/// after calling the handler, still connects.
open class MCNearbyServiceAdvertiser: NSObject, @unchecked Sendable {
  /// This peer.
  public let myPeerID: MCPeerID
  /// The discovery info published (TXT pairs), as given.
  public let discoveryInfo: [String: String]?
  /// The service type, as given.
  public let serviceType: String

  private let queue: DispatchQueue
  private let ferry: Result<Advertiser, MCError>
  private let state = Mutex(State())

  private struct State {
    var delegate: WeakReference<any MCNearbyServiceAdvertiserDelegate>?
    /// The run under way: publishing, then handing out its invitations; nil when stopped.
    var run: Task<Void, Never>?
    /// Counts runs: an invitation of an earlier run is declined.
    var generation: UInt64 = 0
    /// Invitations that came while there was no delegate, for the next one set.
    var waiting: [Received] = []

    /// Whether `generation` is the run under way.
    func isCurrent(_ generation: UInt64) -> Bool {
      run != nil && self.generation == generation
    }
  }

  /// An invitation for the delegate: the run it came in, who, with what context, and the
  /// handler that answers it.
  private struct Received: Sendable {
    let generation: UInt64
    let invitation: Invitation
    let peer: MCPeerID
    let context: Data?
    let handler: @Sendable (Bool, MCSession?) -> Void
  }

  /// The delegate (held weakly). Any thread, before or after ``startAdvertisingPeer()``:
  /// invitations that come while there is none wait for the next one set (until the inviter
  /// gives up, or advertising stops).
  public var delegate: (any MCNearbyServiceAdvertiserDelegate)? {
    get { state.withLock { $0.delegate }?.object }
    set {
      let reference = newValue.map { WeakReference($0) }
      let waiting = state.withLock { state -> [Received] in
        state.delegate = reference
        guard reference != nil else { return [] }
        defer { state.waiting = [] }
        return state.waiting
      }
      guard !waiting.isEmpty else { return }
      queue.async { [self] in
        for received in waiting { offer(received) }
      }
    }
  }

  /// Prepares an advertiser; nothing is published until ``startAdvertisingPeer()``.
  ///
  /// Traps, as Apple's raises an exception, when `serviceType` is not 1–15 ASCII letters,
  /// digits and single inner hyphens with a letter, or `myPeerID` is a remote peer. Discovery
  /// info Ferry cannot publish (keys `v` and `fp` are Ferry's; a pair over 255 bytes) is
  /// reported at start, by `advertiser(_:didNotStartAdvertisingPeer:)`.
  public init(peer myPeerID: MCPeerID, discoveryInfo info: [String: String]?, serviceType: String) {
    let type = ServiceTypeCheck.validated(serviceType, by: "MCNearbyServiceAdvertiser")
    guard let identity = myPeerID.identity else {
      preconditionFailure("MCNearbyServiceAdvertiser: \(myPeerID) is a remote peer")
    }
    self.myPeerID = myPeerID
    self.discoveryInfo = info
    self.serviceType = serviceType
    queue = DispatchQueue(label: "FerryMultipeer.MCNearbyServiceAdvertiser.\(serviceType)")
    do {
      ferry = .success(
        try Advertiser(
          identity: identity, displayName: myPeerID.displayName, serviceType: type,
          discoveryInfo: info ?? [:]))
    } catch {
      ferry = .failure(MCError(error))
    }
    super.init()
  }

  deinit {
    stopAdvertisingPeer()
  }

  /// Publishes the peer and starts taking invitations; does nothing while advertising.
  /// Failures reach `advertiser(_:didNotStartAdvertisingPeer:)`, after which nothing runs and
  /// a later call tries again.
  open func startAdvertisingPeer() {
    let advertiser: Advertiser
    switch ferry {
    case .failure(let error):
      report(error)
      return
    case .success(let ferry):
      advertiser = ferry
    }
    let this = WeakReference(self)
    state.withLock { state in
      guard state.run == nil else { return }
      state.generation += 1
      let generation = state.generation
      // Stopping cancels this task, which matters only until the service is published (a
      // start cancelled early stops its own run); the invitations are read by a task of their
      // own, which a stop ends by finishing the run's invitations once they are drained.
      state.run = Task {
        // Stopped before it began: a late start would stop the run of a later one.
        guard !Task.isCancelled, this.object?.isCurrent(generation) == true else { return }
        do throws(DiscoveryError) {
          _ = try await advertiser.start()
        } catch .stopped {
          // Stopped: by stopAdvertisingPeer(), or under this run (then a later start works).
          this.object?.runEnded(generation)
          return
        } catch {
          // Not advertising: nothing runs, and a later start tries again.
          guard this.object?.runEnded(generation) == true else { return }
          advertiser.stop()
          this.object?.report(MCError(error))
          return
        }
        // Read after the start, and read only when no later start began since (that one's
        // run has a sequence of its own); stopped since, it is drained and declined.
        let invitations = advertiser.invitations
        guard this.object?.isLatest(generation) == true else { return }
        Task {
          for await invitation in invitations {
            guard let advertiser = this.object, advertiser.isCurrent(generation) else {
              invitation.decline(reason: "not advertising")
              continue
            }
            advertiser.received(invitation, run: generation)
          }
        }
      }
    }
  }

  /// Withdraws the peer from the network and stops taking invitations; the ones not yet
  /// handed to the delegate are declined. Those already handed to it stay answerable, and
  /// answering them accepts into the session as before. ``startAdvertisingPeer()`` starts
  /// again.
  open func stopAdvertisingPeer() {
    let (run, waiting) = state.withLock { state in
      defer {
        state.run = nil
        state.waiting = []
      }
      return (state.run, state.waiting)
    }
    run?.cancel()
    if case .success(let advertiser) = ferry { advertiser.stop() }
    for received in waiting { received.invitation.decline(reason: "not advertising") }
  }

  /// Whether run `generation` is the one under way.
  private func isCurrent(_ generation: UInt64) -> Bool {
    state.withLock { $0.isCurrent(generation) }
  }

  /// Whether no run began after run `generation` (it may be stopped).
  private func isLatest(_ generation: UInt64) -> Bool {
    state.withLock { $0.generation == generation }
  }

  /// Run `generation` ended by itself (it could not start).
  ///
  /// - Returns: Whether it was the run under way (not one a stop ended).
  @discardableResult
  private func runEnded(_ generation: UInt64) -> Bool {
    state.withLock { state in
      guard state.isCurrent(generation) else { return false }
      state.run = nil
      return true
    }
  }

  private func report(_ error: MCError) {
    queue.async { [self] in
      delegate?.advertiser(self, didNotStartAdvertisingPeer: error)
    }
  }

  /// Hands `invitation`, of run `generation`, to the delegate, on the queue.
  private func received(_ invitation: Invitation, run generation: UInt64) {
    let peer = MCPeerID(remote: invitation.peer)
    let context = invitation.context.isEmpty ? nil : invitation.contextData
    let answered = Atomic<Bool>(false)
    // Holds neither the advertiser nor its run: answerable after a stop or a release.
    let handler: @Sendable (Bool, MCSession?) -> Void = { accept, session in
      guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
      guard accept, let session else {
        invitation.decline()
        return
      }
      let ferry = session.ferrySession
      session.attempt(with: peer) { try await invitation.accept(into: ferry) }
    }
    let received = Received(
      generation: generation, invitation: invitation, peer: peer, context: context,
      handler: handler)
    queue.async { [self] in offer(received) }
  }

  /// Hands `received` to the delegate (on the queue, no lock held); with no delegate, keeps it
  /// for the next one set. An invitation the inviter withdrew meanwhile is dropped, one whose
  /// run was stopped declined.
  private func offer(_ received: Received) {
    guard received.invitation.isPending else { return }
    let (current, reference) = state.withLock {
      state -> (Bool, WeakReference<any MCNearbyServiceAdvertiserDelegate>?) in
      guard state.isCurrent(received.generation) else { return (false, nil) }
      if state.delegate?.object != nil { return (true, state.delegate) }
      state.waiting.removeAll { !$0.invitation.isPending }
      state.waiting.append(received)
      return (true, nil)
    }
    guard current else {
      received.invitation.decline(reason: "not advertising")
      return
    }
    guard let reference else { return }
    // Released since it was checked: kept for the next one.
    guard let delegate = reference.object else { return offer(received) }
    delegate.advertiser(
      self, didReceiveInvitationFromPeer: received.peer, withContext: received.context,
      invitationHandler: received.handler)
  }
}
