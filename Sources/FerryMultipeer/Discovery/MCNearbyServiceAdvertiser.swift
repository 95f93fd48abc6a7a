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
/// thread.
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
    /// The run under way: reading its invitations.
    var run: Task<Void, Never>?
  }

  /// The delegate (held weakly). Any thread.
  public var delegate: (any MCNearbyServiceAdvertiserDelegate)? {
    get { state.withLock { $0.delegate }?.object }
    set {
      let reference = newValue.map { WeakReference($0) }
      state.withLock { $0.delegate = reference }
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
      state.run = Task {
        do throws(DiscoveryError) {
          _ = try await advertiser.start()
        } catch .stopped {
          return
        } catch {
          // Not advertising: nothing runs, and a later start tries again.
          advertiser.stop()
          this.object?.runEnded()
          this.object?.report(MCError(error))
          return
        }
        for await invitation in advertiser.invitations {
          guard let advertiser = this.object else {
            invitation.decline(reason: "not advertising")
            continue
          }
          advertiser.received(invitation)
        }
      }
    }
  }

  /// Withdraws the peer from the network and stops taking invitations (those already handed
  /// to the delegate stay answerable). ``startAdvertisingPeer()`` starts again.
  open func stopAdvertisingPeer() {
    let run = state.withLock { state in
      defer { state.run = nil }
      return state.run
    }
    run?.cancel()
    if case .success(let advertiser) = ferry { advertiser.stop() }
  }

  /// The run under way ended by itself (it could not start).
  private func runEnded() {
    state.withLock { $0.run = nil }
  }

  private func report(_ error: MCError) {
    queue.async { [self] in
      delegate?.advertiser(self, didNotStartAdvertisingPeer: error)
    }
  }

  /// Hands `invitation` to the delegate (declined when there is none).
  private func received(_ invitation: Invitation) {
    let peer = MCPeerID(remote: invitation.peer)
    let context = invitation.context.isEmpty ? nil : invitation.contextData
    let answered = Atomic<Bool>(false)
    let handler: @Sendable (Bool, MCSession?) -> Void = { accept, session in
      guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
      guard accept, let session else {
        invitation.decline()
        return
      }
      let ferry = session.ferrySession
      session.attempt(with: peer) { try await invitation.accept(into: ferry) }
    }
    queue.async { [self] in
      guard let delegate else { return handler(false, nil) }
      delegate.advertiser(
        self, didReceiveInvitationFromPeer: peer, withContext: context,
        invitationHandler: handler)
    }
  }
}
