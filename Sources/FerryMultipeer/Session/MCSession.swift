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
/// resource a connected peer sends is accepted, into a private temporary folder the session
/// removes when it is released. Delegate calls arrive on the session's own serial queue, in
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
  let outgoing: AsyncStream<OutgoingMessage>.Continuation

  /// What the lock guards.
  struct State {
    var delegate: WeakReference<any MCSessionDelegate>?
    var gate = PeerGate<Pending>()
    /// The object the delegate knows each peer by.
    var peers: [Fingerprint: MCPeerID] = [:]
    /// Connection attempts under way (from ``connectPeer(_:withNearbyConnectionData:)``).
    var attempts: [Fingerprint: Task<Void, Never>] = [:]
  }

  /// An event from a peer, waiting for the gate: how to tell the delegate, and whom to tell
  /// once it is told (or dropped).
  struct Pending: Sendable {
    let deliver: @Sendable (MCSession, (any MCSessionDelegate)?) -> Void
    let done: @Sendable () -> Void
  }

  /// A message queued by ``send(_:toPeers:with:)``, in call order.
  struct OutgoingMessage: Sendable {
    let data: Data
    let peers: [PeerID]
    let mode: SendMode
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
    let (messages, outgoing) = AsyncStream<OutgoingMessage>.makeStream()
    self.outgoing = outgoing
    super.init()
    ferrySession.receiveResources(ReceiveOptions(destination: resourceFolder, relocate: false))
    SessionBridge.start(self, sending: messages)
  }

  deinit {
    outgoing.finish()
    let attempts = state.withLock { $0.attempts.values }
    for attempt in attempts { attempt.cancel() }
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
    state.withLock { $0.gate.isConnected(peer.ferryPeer.fingerprint) }
  }

  /// An invitation to or from `peer` began; end it with ``attemptEnded(_:failed:)``.
  func attemptBegan(_ peer: MCPeerID) {
    _ = object(for: peer.ferryPeer, preferring: peer)
    gate { $0.attemptBegan(peer.ferryPeer) }
  }

  /// An invitation to or from `peer` ended, in failure or not.
  func attemptEnded(_ peer: MCPeerID, failed: Bool) {
    gate { $0.attemptEnded(peer.ferryPeer, failed: failed) }
  }

  /// Runs one gate transition under the lock and performs its steps, in order, on the queue.
  func gate(_ transition: (inout PeerGate<Pending>) -> [PeerGate<Pending>.Step]) {
    state.withLock { state in
      for step in transition(&state.gate) {
        perform(step, peers: state.peers)
      }
    }
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
