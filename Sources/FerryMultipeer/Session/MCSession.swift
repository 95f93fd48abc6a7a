import Dispatch
import Ferry
import Foundation
import Synchronization

/// A session with nearby peers, as MultipeerConnectivity's `MCSession`: a Ferry ``Session``
/// behind Apple's names, with its events delivered to a delegate.
///
/// ```swift
/// let session = MCSession(peer: me, securityIdentity: nil, encryptionPreference: .required)
/// session.delegate = self
/// try session.send(Data("hello".utf8), toPeers: session.connectedPeers, with: .reliable)
/// ```
///
/// Every connection is mutual TLS 1.3 (``MCEncryptionPreference`` changes nothing). Every
/// resource a connected peer sends is accepted (once the delegate has heard it `connected`),
/// into a private temporary folder the session removes when it is released. Delegate calls arrive on the session's own serial queue, in
/// order (``MCSessionDelegate``); the methods can be called from any thread.
open class MCSession: NSObject, @unchecked Sendable {
  /// This peer.
  public let myPeerID: MCPeerID
  /// The identity given at creation (kept and reported; Ferry's identity is ``myPeerID``'s).
  public let securityIdentity: [Any]?
  /// The preference given at creation (kept and reported: Ferry always encrypts).
  public let encryptionPreference: MCEncryptionPreference
  /// The Ferry session behind it, for what Apple's API has no name for.
  public let ferrySession: Session

  let queue: DispatchQueue
  let state: Mutex<State>
  let resourceFolder: URL
  let outgoing: OutgoingMessages

  /// What the lock guards.
  struct State {
    var delegate: WeakReference<any MCSessionDelegate>?
    var gate = PeerGate<Pending>()
    /// The object the delegate knows each peer by.
    var peers: [Fingerprint: MCPeerID] = [:]
    /// Connection attempts under way (``MCNearbyServiceBrowser/invitePeer(_:to:withContext:timeout:)``,
    /// ``connectPeer(_:withNearbyConnectionData:)``), cancelled by ``disconnect()``.
    var attempts: [Fingerprint: Task<Void, Never>] = [:]
    /// The unpublished listener of the nearby-connection API, once used.
    var nearby: NearbyListener?
  }

  /// An event from a peer, waiting for the gate: how to tell the delegate, and whom to tell
  /// once it is told (or dropped).
  struct Pending: Sendable {
    let deliver: @Sendable (MCSession, (any MCSessionDelegate)?) -> Void
    let done: @Sendable () -> Void
  }

  /// The session's delegate (held weakly). Any thread.
  public var delegate: (any MCSessionDelegate)? {
    get { state.withLock { $0.delegate }?.object }
    set {
      let reference = newValue.map { WeakReference($0) }
      state.withLock { $0.delegate = reference }
    }
  }

  /// Creates a session for `myPeerID`, which must be a local peer (made with
  /// ``MCPeerID/init(displayName:)`` or restored from its archive).
  public convenience init(peer myPeerID: MCPeerID) {
    self.init(peer: myPeerID, securityIdentity: nil, encryptionPreference: .optional)
  }

  /// Creates a session for `myPeerID`.
  ///
  /// - Parameters:
  ///   - myPeerID: A local peer; its identity is the session's TLS certificate. Traps for a
  ///     remote peer (one another session reported), which has no private key.
  ///   - identity: Kept and reported only: Ferry proves ``myPeerID``'s own certificate.
  ///   - encryptionPreference: Kept and reported only: Ferry always encrypts.
  public init(
    peer myPeerID: MCPeerID, securityIdentity identity: [Any]?,
    encryptionPreference: MCEncryptionPreference
  ) {
    guard let local = myPeerID.identity else {
      preconditionFailure(
        "MCSession: \(myPeerID) is a remote peer; make one with MCPeerID(displayName:)")
    }
    self.myPeerID = myPeerID
    self.securityIdentity = identity
    self.encryptionPreference = encryptionPreference
    // A name MCPeerID accepted is one Session accepts.
    ferrySession = try! Session(identity: local, displayName: myPeerID.displayName)
    queue = DispatchQueue(label: "FerryMultipeer.MCSession.\(myPeerID.displayName)")
    state = Mutex(State())
    resourceFolder = ReceivedResources.makeFolder()
    let stillConnected = Mutex<WeakReference<MCSession>?>(nil)
    let ferry = ferrySession
    outgoing = OutgoingMessages(ferry: ferry) { peer in
      stillConnected.withLock { $0 }?.object?.isConnected(peer) ?? false
    }
    super.init()
    // Offers are asked about, so that only peers the delegate let in can write files.
    ferrySession.askAboutResourceOffers()
    stillConnected.withLock { $0 = WeakReference(self) }
    SessionBridge.start(self)
  }

  deinit {
    // What waited for a peer's connected: its senders (the message task) go on.
    let waiting = state.withLock { $0.gate.drainAll() }
    for case .drop(let pending) in waiting { pending.done() }
    outgoing.finishAll()
    let (attempts, nearby) = state.withLock { ($0.attempts.values, $0.nearby) }
    for attempt in attempts { attempt.cancel() }
    nearby?.stop()
    ferrySession.close()
    ReceivedResources.removeFolder(resourceFolder)
  }

  /// The peers connected now: those whose `connected` the delegate was told, and not yet
  /// `notConnected`. Any thread.
  public var connectedPeers: [MCPeerID] {
    state.withLock { state in
      state.gate.connected.compactMap { state.peers[$0] }
    }.sorted { $0.displayName < $1.displayName }
  }

  /// Disconnects from every peer; the session stays usable (peers can be invited again).
  open func disconnect() {
    let attempts = state.withLock { state in
      defer { state.attempts = [:] }
      return Array(state.attempts.values)
    }
    for attempt in attempts { attempt.cancel() }
    ferrySession.disconnect()
  }

  // MARK: - For the bridge, browser and advertiser

  /// The object the delegate knows `peer` by (the first one seen for its identity).
  func object(for peer: PeerID, preferring known: MCPeerID? = nil) -> MCPeerID {
    state.withLock { state in
      if let existing = state.peers[peer.fingerprint] { return existing }
      let object = known ?? MCPeerID(remote: peer)
      state.peers[peer.fingerprint] = object
      return object
    }
  }

  /// Whether `peer` is connected as the delegate knows it.
  func isConnected(_ peer: MCPeerID) -> Bool {
    isConnected(peer.ferryPeer)
  }

  /// Whether `peer` is connected as the delegate knows it (for the polling paths, which have
  /// Ferry's peer and need no object).
  func isConnected(_ peer: PeerID) -> Bool {
    state.withLock { $0.gate.isConnected(peer.fingerprint) }
  }

  /// `task` connects to `peer`: ``disconnect()`` cancels it.
  func track(_ task: Task<Void, Never>, for peer: MCPeerID) {
    let replaced = state.withLock {
      $0.attempts.updateValue(task, forKey: peer.ferryPeer.fingerprint)
    }
    replaced?.cancel()
  }

  /// Runs one invitation to or from `peer`: the delegate hears `connecting` now, and
  /// `notConnected` if `body` throws and no other attempt connects the peer. Holds the session
  /// weakly: releasing it ends what its delegate hears.
  ///
  /// - Returns: The task running `body` (``track(_:for:)`` it when ``disconnect()`` should
  ///   cancel it).
  @discardableResult
  func attempt(with peer: MCPeerID, _ body: @escaping @Sendable () async throws -> Void)
    -> Task<Void, Never>
  {
    attemptBegan(peer)
    let this = WeakReference(self)
    return Task {
      do {
        try await body()
        this.object?.attemptEnded(peer, failed: false)
      } catch {
        this.object?.attemptEnded(peer, failed: true)
      }
    }
  }

  /// An invitation to or from `peer` began; end it with ``attemptEnded(_:failed:)``.
  private func attemptBegan(_ peer: MCPeerID) {
    _ = object(for: peer.ferryPeer, preferring: peer)
    gate { $0.attemptBegan(peer.ferryPeer) }
  }

  /// An invitation to or from `peer` ended, in failure or not.
  private func attemptEnded(_ peer: MCPeerID, failed: Bool) {
    gate { $0.attemptEnded(peer.ferryPeer, failed: failed) }
  }

  /// Runs one gate transition under the lock and performs its steps, in order, on the queue.
  func gate(_ transition: (inout PeerGate<Pending>) -> [PeerGate<Pending>.Step]) {
    state.withLock { state in
      for step in transition(&state.gate) {
        // Every peer the delegate hears of gets its object now (connectedPeers lists it).
        switch step {
        case .report(let peer, _), .askCertificate(let peer, _):
          if state.peers[peer.fingerprint] == nil {
            state.peers[peer.fingerprint] = MCPeerID(remote: peer)
          }
        default:
          break
        }
        perform(step, peers: state.peers)
      }
      for gone in state.gate.prune(keeping: Self.rememberedPeers) {
        state.peers[gone] = nil
      }
    }
  }

  /// Peers the session keeps state for once they are neither connecting nor connected.
  static let rememberedPeers = 256

  /// An event from `peer` for the gate (on a bridge task).
  func received(_ pending: Pending, from peer: PeerID) {
    let alive = ferrySession.isConnected(peer)
    gate { $0.received(pending, from: peer, linkAlive: alive) }
  }

  /// Performs one step (under the lock: only queues work, never calls the application).
  private func perform(_ step: PeerGate<Pending>.Step, peers: [Fingerprint: MCPeerID]) {
    func object(_ peer: PeerID) -> MCPeerID {
      peers[peer.fingerprint] ?? MCPeerID(remote: peer)
    }
    switch step {
    case .report(let peer, let mcState):
      let peerObject = object(peer)
      queue.async { [self] in
        delegate?.session(self, peer: peerObject, didChange: mcState)
      }
    case .askCertificate(let peer, let question):
      let peerObject = object(peer)
      let certificate = ferrySession.certificateDER(of: peer).map { Data($0) }
      let answered = Atomic<Bool>(false)
      let handler: @Sendable (Bool) -> Void = { [weak self] accepted in
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self?.gate { $0.certificateAnswered(accepted, for: peer, question: question) }
      }
      queue.async { [self] in
        if let delegate {
          delegate.session(
            self, didReceiveCertificate: certificate.map { [$0] }, fromPeer: peerObject,
            certificateHandler: handler)
        } else {
          handler(true)
        }
      }
      // Unanswered in time: declined (what waits for the answer must not wait for ever).
      Task {
        try? await Task.sleep(for: PeerGate<Pending>.certificateTimeout)
        handler(false)
      }
    case .deliver(let pending):
      queue.async { [self] in
        pending.deliver(self, delegate)
        pending.done()
      }
    case .drop(let pending):
      pending.done()
    case .disconnect(let peer):
      ferrySession.disconnect(peer)
    case .awaitReplacement(let peer, let token):
      let this = WeakReference(self)
      Task {
        try? await Task.sleep(for: PeerGate<Pending>.replacementGrace)
        this.object?.gate { $0.replacementExpired(peer, token: token) }
      }
    }
  }
}
