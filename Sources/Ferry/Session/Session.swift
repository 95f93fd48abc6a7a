import Dispatch
internal import FerryWire
import NIOCore
import NIOPosix
import Synchronization

/// A group of connected peers, as in MultipeerConnectivity: owned by the local peer, holding at
/// most ``maximumPeers`` peers including itself, each connected over its own mutually
/// authenticated TLS 1.3 connection.
///
/// Peers join by invitation: ``Browser/invite(_:to:context:timeout:onVerificationCode:)`` (or
/// ``invite(host:port:expecting:context:timeout:onVerificationCode:)`` without discovery) on
/// one side, ``Invitation/accept(into:)`` on the other. Every state change
/// of every peer is reported on ``stateChanges``. A heartbeat notices a peer that vanished
/// without closing (power loss, SIGKILL, cable pulled) within ``ConnectionTimeouts/deadAfter``
/// plus one heartbeat interval.
public final class Session: Sendable {
  /// The most peers a session holds, this one included.
  public static let maximumPeers = SessionLimits.maximumPeers

  /// The identity this session authenticates with.
  public let identity: Identity
  /// This peer.
  public let myPeer: PeerID
  /// The connection timers.
  public let timeouts: ConnectionTimeouts
  /// Every peer state change, in order. Finishes after ``close()``. Several readers may wait
  /// at once (`AsyncStream`'s rule): each change goes to one of them, so one reader that wants
  /// them all must be the only one.
  public let stateChanges: AsyncStream<PeerStateChange>

  /// What one peer may make this session hold.
  public let limits: SessionLimits

  /// How links join: inviting, adopting, the crossing rule.
  let connector: SessionConnector
  let transfers: SessionTransfers
  let continuation: AsyncStream<PeerStateChange>.Continuation
  let members = Mutex(SessionMembers())
  /// Peers whose last link ended on purpose (a GOODBYE, a violation) rather than being lost:
  /// a retrying send does not connect to them again.
  /// Set by ``close()``: no invitation goes out after it, and no link is adopted.
  let closed = Atomic<Bool>(false)

  /// Creates a session for `identity`, presented to peers as `displayName`.
  ///
  /// - Parameters:
  ///   - limits: What one peer may make this session hold (streams, unread bytes, offers,
  ///     files, replies); a peer beyond a limit is disconnected.
  ///   - accepting: Which incoming messages and streams are delivered; the rest are refused
  ///     without being buffered (a receiver that never reads them should not accept them).
  /// - Throws: ``PeerIDError`` when the display name is not valid.
  public convenience init(
    identity: Identity, displayName: String, timeouts: ConnectionTimeouts = .init(),
    limits: SessionLimits = .init(), accepting: IncomingTraffic = .all
  ) throws(PeerIDError) {
    try self.init(
      identity: identity, displayName: displayName, timeouts: timeouts, limits: limits,
      accepting: accepting, makeOfferExecutor: { DispatchQueue(label: "ferry.incoming-offer") })
  }

  /// A session whose incoming offers run their work on what `makeOfferExecutor` makes (tests
  /// and the fuzzer run it inline, beside an `EmbeddedChannel`).
  init(
    identity: Identity, displayName: String, timeouts: ConnectionTimeouts,
    limits: SessionLimits, accepting: IncomingTraffic,
    makeOfferExecutor: @escaping @Sendable () -> any OfferExecutor
  ) throws(PeerIDError) {
    self.identity = identity
    self.myPeer = try PeerID(displayName: displayName, fingerprint: identity.fingerprint)
    self.timeouts = timeouts
    self.limits = limits
    self.transfers = SessionTransfers(
      limits: limits, accepting: accepting, stall: timeouts.transferStall,
      makeExecutor: makeOfferExecutor)
    // A key and certificate that Identity accepted (matching P-256 pair) are valid for BoringSSL.
    self.connector = SessionConnector(tls: try! TLSContexts(identity: identity))
    (stateChanges, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
  }

  deinit {
    close()
  }

  /// The peers connected now.
  public var connectedPeers: [PeerID] {
    members.withLock { $0.links.values.map(\.peer) }.sorted { $0.displayName < $1.displayName }
  }

  /// Whether `peer` (by fingerprint) is connected now. Any thread.
  public func isConnected(_ peer: PeerID) -> Bool {
    members.withLock { $0.links[peer.fingerprint] != nil }
  }

  /// The certificate (DER) `peer` presented in the TLS handshake of its link, nil when it is
  /// not connected. Its SHA-256 is `peer.fingerprint`. Any thread.
  public func certificateDER(of peer: PeerID) -> [UInt8]? {
    members.withLock { $0.links[peer.fingerprint]?.link.peerCertificate.value }
  }

  /// The verification code of the link that connects `peer` now, as both ends display it; nil
  /// when `peer` is not connected. Each connection has a code of its own (a peer that
  /// reconnects has a new one). An inviter learns the code before the answer through the
  /// `onVerificationCode` of the `invite` methods; an advertiser, from
  /// ``Invitation/verificationCode``. Any thread.
  public func verificationCode(with peer: PeerID) -> VerificationCode? {
    members.withLock { $0.links[peer.fingerprint]?.verificationCode }
  }

  /// The link to a connected peer.
  func link(to peer: PeerID) throws(TransferError) -> ConnectionLink {
    try linkAndVersion(to: peer).0
  }

  /// The link to `peer` and the protocol version agreed on it, read together (a link
  /// replaced in between would pair one link with another's version).
  ///
  /// - Throws: ``TransferError/notConnected(_:)``.
  func linkAndVersion(to peer: PeerID) throws(TransferError) -> (ConnectionLink, UInt16) {
    guard let member = members.withLock({ $0.links[peer.fingerprint] }) else {
      throw .notConnected(peer)
    }
    return (member.link, member.version)
  }

  /// Disconnects `peer` (GOODBYE, then close); its state becomes notConnected.
  public func disconnect(_ peer: PeerID) {
    let member = members.withLock { $0.links[peer.fingerprint] }
    member?.link.onHandler { $0.disconnect(reason: "disconnected") }
  }

  /// Disconnects every peer.
  public func disconnect() {
    for member in members.withLock({ Array($0.links.values) }) {
      member.link.onHandler { $0.disconnect(reason: "disconnected") }
    }
  }

  /// Disconnects every peer and finishes ``stateChanges``, ``messages`` and ``incomingStreams``;
  /// invitations made afterwards fail with ``InvitationError/cancelled``.
  public func close() {
    closed.store(true, ordering: .releasing)
    // Accepts waiting for this end's own invitations go on, and find the session closed.
    for waiter in members.withLock({ $0.stopAllSettling() }) { waiter.resume() }
    disconnect()
    continuation.finish()
    transfers.finish()
  }

  /// ``close()``, then waits (at most `timeout`) until every connection has closed, so that what
  /// was sent last (a RESET, the last FILE_ACKs, the GOODBYE) has left before, say, the process
  /// exits. Any task.
  public func closeAndWait(timeout: Duration = .seconds(2)) async {
    let channels = members.withLock { $0.links.values.map(\.link.channel) }
    close()
    await Self.waitForClose(of: channels, until: .now + timeout)
  }

  /// Waits (at most `timeout`) until every peer connected now has disconnected, without
  /// disconnecting anyone: for example until a sender hangs up once it has its last
  /// acknowledgements. Peers that connect meanwhile are not waited for. Any task.
  public func waitUntilDisconnected(timeout: Duration) async {
    let channels = members.withLock { $0.links.values.map(\.link.channel) }
    await Self.waitForClose(of: channels, until: .now + timeout)
  }

  /// Waits until each of `channels` has closed, or `deadline` passes.
  private static func waitForClose(
    of channels: [any Channel], until deadline: ContinuousClock.Instant
  ) async {
    for channel in channels {
      let left = deadline - .now
      guard left > .zero else { return }
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let once = Once()
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(left.timeAmount.nanoseconds)) {
          if once.claim() { continuation.resume() }
        }
        channel.closeFuture.whenComplete { _ in
          timer.cancel()
          if once.claim() { continuation.resume() }
        }
      }
    }
  }
}
