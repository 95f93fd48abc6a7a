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
/// into a private temporary folder the session removes when it is released. Delegate calls
/// arrive on the session's own serial queue, in order (``MCSessionDelegate``); the methods can
/// be called from any thread, delegate calls included. Set the delegate before the session is
/// first used (invited, or handed to an invitation handler): data, streams and resources that
/// arrive while there is none are lost, as on Apple's platforms. A delegate set just after
/// (as apps do, right after handing the session over) is still told each peer's state.
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
    /// Invitations this session sends, under way
    /// (``MCNearbyServiceBrowser/invitePeer(_:to:withContext:timeout:)``,
    /// ``connectPeer(_:withNearbyConnectionData:)``): the latest for each peer, cancelled by
    /// ``disconnect()``; each leaves when it ends.
    var attempts: [Fingerprint: Attempt] = [:]
    /// The token of the latest attempt begun.
    var lastAttempt: UInt64 = 0
    /// The unpublished listener of the nearby-connection API, once used.
    var nearby: NearbyListener?
    /// Each peer's latest `connecting` or `connected` that came while there was no delegate,
    /// for the next one set (a `notConnected`, or a state told, ends it).
    var untold: [Fingerprint: (peer: MCPeerID, state: MCSessionState)] = [:]
  }

  /// One invitation under way: its token (which tells it from a later one to the same peer)
  /// and its task.
  struct Attempt: Sendable {
    let token: UInt64
    let task: Task<Void, Never>
  }

  /// An event from a peer, waiting for the gate: how to tell the delegate, and whom to tell
  /// once it is told (or dropped).
  struct Pending: Sendable {
    let deliver: @Sendable (MCSession, (any MCSessionDelegate)?) -> Void
    let done: @Sendable () -> Void
  }

  /// The session's delegate (held weakly). Any thread. One set after the session was put to
  /// use (right after handing it to an invitation handler, or after inviting with it) is told
  /// the state each peer is in that came while there was none (`connecting` or `connected`), in
  /// order with what follows.
  public var delegate: (any MCSessionDelegate)? {
    get { state.withLock { $0.delegate }?.object }
    set {
      let reference = newValue.map { WeakReference($0) }
      state.withLock { $0.delegate = reference }
      // On the queue, after every report queued before: those see this delegate themselves.
      if reference != nil { queue.async { [self] in tellUntold() } }
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
    let (attempts, nearby) = state.withLock { (Array($0.attempts.values), $0.nearby) }
    for attempt in attempts { attempt.task.cancel() }
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
    for attempt in attempts { attempt.task.cancel() }
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

  /// Runs one invitation to or from `peer`: the delegate hears `connecting` now, and
  /// `notConnected` if `body` throws and no other attempt connects the peer. Holds the session
  /// weakly: releasing it ends what its delegate hears. Any thread.
  ///
  /// - Parameter tracked: Whether it is an invitation this session sends: ``disconnect()``
  ///   and ``cancelConnectPeer(_:)`` cancel it, and it cancels the one still under way to the
  ///   same peer.
  /// - Returns: The task running `body`.
  @discardableResult
  func attempt(
    with peer: MCPeerID, tracked: Bool = false,
    _ body: @escaping @Sendable () async throws -> Void
  ) -> Task<Void, Never> {
    attemptBegan(peer)
    let this = WeakReference(self)
    let fingerprint = peer.ferryPeer.fingerprint
    let (task, replaced) = state.withLock { state -> (Task<Void, Never>, Attempt?) in
      state.lastAttempt += 1
      let token = state.lastAttempt
      // Made under the lock, so that it is listed before it can end and leave the list.
      let task = Task {
        do {
          try await body()
          this.object?.attemptEnded(peer, token: token, failed: false)
        } catch {
          this.object?.attemptEnded(peer, token: token, failed: true)
        }
      }
      guard tracked else { return (task, nil) }
      let attempt = Attempt(token: token, task: task)
      return (task, state.attempts.updateValue(attempt, forKey: fingerprint))
    }
    // Cancelled once the lock is released: cancelling runs cancellation handlers at once.
    replaced?.task.cancel()
    return task
  }

  /// An invitation to or from `peer` began; end it with ``attemptEnded(_:token:failed:)``.
  private func attemptBegan(_ peer: MCPeerID) {
    _ = object(for: peer.ferryPeer, preferring: peer)
    gate { $0.attemptBegan(peer.ferryPeer) }
  }

  /// The invitation `token` to or from `peer` ended, in failure or not.
  private func attemptEnded(_ peer: MCPeerID, token: UInt64, failed: Bool) {
    let fingerprint = peer.ferryPeer.fingerprint
    state.withLock { state in
      if state.attempts[fingerprint]?.token == token { state.attempts[fingerprint] = nil }
    }
    gate { $0.attemptEnded(peer.ferryPeer, failed: failed) }
  }

  /// Runs one gate transition under the lock, where its delegate calls are queued, in order;
  /// the rest of its steps (dropping events, closing links) runs once the lock is released, so
  /// that no lock is held while Ferry's session or a sender waiting for its event is called.
  func gate(_ transition: (inout PeerGate<Pending>) -> [PeerGate<Pending>.Step]) {
    let (dropped, disconnected) = state.withLock { state -> ([Pending], [PeerID]) in
      var dropped: [Pending] = []
      var disconnected: [PeerID] = []
      for step in transition(&state.gate) {
        switch step {
        case .report(let peer, _), .askCertificate(let peer, _):
          // Every peer the delegate hears of gets its object now (connectedPeers lists it).
          if state.peers[peer.fingerprint] == nil {
            state.peers[peer.fingerprint] = MCPeerID(remote: peer)
          }
          enqueue(step, peers: state.peers)
        case .drop(let pending):
          dropped.append(pending)
        case .disconnect(let peer):
          disconnected.append(peer)
        case .deliver, .awaitReplacement:
          enqueue(step, peers: state.peers)
        }
      }
      for gone in state.gate.prune(keeping: Self.rememberedPeers) {
        state.peers[gone] = nil
      }
      return (dropped, disconnected)
    }
    for peer in disconnected { ferrySession.disconnect(peer) }
    for pending in dropped { pending.done() }
  }

  /// Peers the session keeps state for once they are neither connecting nor connected.
  static let rememberedPeers = 256

  /// An event from `peer` for the gate (on a bridge task).
  func received(_ pending: Pending, from peer: PeerID) {
    let alive = ferrySession.isConnected(peer)
    gate { $0.received(pending, from: peer, linkAlive: alive) }
  }

  /// Queues one step's work (under the lock: only queues it, on the delegate queue or a new
  /// task, and never calls the application or Ferry's session).
  private func enqueue(_ step: PeerGate<Pending>.Step, peers: [Fingerprint: MCPeerID]) {
    func object(_ peer: PeerID) -> MCPeerID {
      peers[peer.fingerprint] ?? MCPeerID(remote: peer)
    }
    switch step {
    case .report(let peer, let mcState):
      let peerObject = object(peer)
      queue.async { [self] in
        report(mcState, of: peerObject)
      }
    case .askCertificate(let peer, let question):
      let peerObject = object(peer)
      let answered = Atomic<Bool>(false)
      let handler: @Sendable (Bool) -> Void = { [weak self] accepted in
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self?.gate { $0.certificateAnswered(accepted, for: peer, question: question) }
      }
      queue.async { [self] in
        // Read here, with no lock held (nil when the link is gone by now).
        let certificate = ferrySession.certificateDER(of: peer).map { Data($0) }
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
    case .awaitReplacement(let peer, let token):
      let this = WeakReference(self)
      Task {
        try? await Task.sleep(for: PeerGate<Pending>.replacementGrace)
        this.object?.gate { $0.replacementExpired(peer, token: token) }
      }
    case .drop, .disconnect:
      break  // performed by gate(_:), once the lock is released
    }
  }

  /// Tells the delegate `peer` is now in `mcState` (on the queue, no lock held). With no
  /// delegate, a `connecting` or `connected` is kept for the next one set.
  private func report(_ mcState: MCSessionState, of peer: MCPeerID) {
    let fingerprint = peer.ferryPeer.fingerprint
    let delegate = state.withLock { state -> (any MCSessionDelegate)? in
      let delegate = state.delegate?.object
      if delegate == nil && mcState != .notConnected {
        state.untold[fingerprint] = (peer, mcState)
      } else {
        state.untold[fingerprint] = nil
      }
      return delegate
    }
    delegate?.session(self, peer: peer, didChange: mcState)
  }

  /// Tells a delegate set late the states it missed (on the queue, after the reports queued
  /// before it was set).
  private func tellUntold() {
    let (delegate, untold) = state.withLock {
      state -> ((any MCSessionDelegate)?, [(peer: MCPeerID, state: MCSessionState)]) in
      guard let delegate = state.delegate?.object, !state.untold.isEmpty else { return (nil, []) }
      defer { state.untold = [:] }
      return (delegate, Array(state.untold.values))
    }
    guard let delegate else { return }
    for (peer, mcState) in untold {
      delegate.session(self, peer: peer, didChange: mcState)
    }
  }
}
