import Foundation
import NIOCore
import Synchronization

/// Making an advertiser: one that only publishes, one that listens for invitations with an
/// identity, one for a session.
extension Advertiser {
  /// Prepares an advertiser; nothing is published until ``start()``.
  ///
  /// - Parameters:
  ///   - peer: This peer; its display name becomes the service instance name and its fingerprint
  ///     the `fp` TXT record.
  ///   - serviceType: The service type, `_ferry._tcp` by default.
  ///   - port: The TCP port peers connect to.
  ///   - discoveryInfo: The application's TXT pairs.
  /// - Throws: ``DiscoveryError/invalidDiscoveryInfo(_:)`` when the pairs break a TXT rule.
  public convenience init(
    peer: PeerID, serviceType: ServiceType = .ferry, port: UInt16,
    discoveryInfo: [String: String] = [:]
  ) throws(DiscoveryError) {
    try self.init(
      peer: peer, serviceType: serviceType, port: port, discoveryInfo: discoveryInfo,
      makeListener: nil)
  }

  /// Prepares an advertiser that listens for invitations; nothing happens until ``start()``.
  ///
  /// - Parameters:
  ///   - identity: This installation's identity; its fingerprint is published as `fp` and its
  ///     certificate presented to inviters.
  ///   - displayName: The name inviters see (1–63 UTF-8 bytes), also the service instance name.
  ///   - serviceType: The service type, `_ferry._tcp` by default.
  ///   - port: The TCP port to listen on; 0 (the default) picks a free one.
  ///   - discoveryInfo: The application's TXT pairs.
  ///   - knownPeers: Where invitations look up known/new/changed-key status and accepted peers
  ///     are recorded; nil reports every inviter as new.
  ///   - maximumPendingInvitations: Invitations allowed to wait for an answer at once; more are
  ///     declined as busy.
  ///   - maximumPendingInvitationsPerAddress: Of those, how many may come from one IP address,
  ///     so that one host cannot keep everyone else busy.
  ///   - timeouts: Handshake deadline and heartbeat of accepted connections.
  /// - Throws: ``DiscoveryError/invalidDiscoveryInfo(_:)`` when the pairs break a TXT rule;
  ///   ``DiscoveryError/invalidDisplayName(_:)`` when the name is not a valid display name.
  public convenience init(
    identity: Identity, displayName: String, serviceType: ServiceType = .ferry,
    port: UInt16 = 0, discoveryInfo: [String: String] = [:], knownPeers: KnownPeers? = nil,
    maximumPendingInvitations: Int = 8, maximumPendingInvitationsPerAddress: Int = 2,
    timeouts: ConnectionTimeouts = .init()
  ) throws(DiscoveryError) {
    let peer: PeerID
    do {
      peer = try PeerID(displayName: displayName, fingerprint: identity.fingerprint)
    } catch {
      throw .invalidDisplayName(error)
    }
    try self.init(
      peer: peer, serviceType: serviceType, port: port, discoveryInfo: discoveryInfo,
      makeListener: {
        InvitationListener(
          identity: identity, displayName: displayName, timeouts: timeouts,
          knownPeers: knownPeers, maximumPending: maximumPendingInvitations,
          maximumPendingPerAddress: maximumPendingInvitationsPerAddress)
      })
  }

  /// Prepares an advertiser for `session`: its identity and display name, so that inviters
  /// see the same peer the session shows once connected (one local identity for both, as
  /// MultipeerConnectivity's one `MCPeerID`). Nothing happens until ``start()``.
  ///
  /// - Parameters: As ``init(identity:displayName:serviceType:port:discoveryInfo:knownPeers:maximumPendingInvitations:maximumPendingInvitationsPerAddress:timeouts:)``;
  ///   the session's timeouts unless others are given.
  /// - Throws: ``DiscoveryError/invalidDiscoveryInfo(_:)`` when the pairs break a TXT rule.
  public convenience init(
    session: Session, serviceType: ServiceType = .ferry, port: UInt16 = 0,
    discoveryInfo: [String: String] = [:], knownPeers: KnownPeers? = nil,
    maximumPendingInvitations: Int = 8, maximumPendingInvitationsPerAddress: Int = 2,
    timeouts: ConnectionTimeouts? = nil
  ) throws(DiscoveryError) {
    try self.init(
      identity: session.identity, displayName: session.myPeer.displayName,
      serviceType: serviceType, port: port, discoveryInfo: discoveryInfo, knownPeers: knownPeers,
      maximumPendingInvitations: maximumPendingInvitations,
      maximumPendingInvitationsPerAddress: maximumPendingInvitationsPerAddress,
      timeouts: timeouts ?? session.timeouts)
  }
}
