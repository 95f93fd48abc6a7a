import Foundation

/// What an advertiser tells its delegate, as MultipeerConnectivity's
/// `MCNearbyServiceAdvertiserDelegate`. Calls arrive on the advertiser's own serial queue.
public protocol MCNearbyServiceAdvertiserDelegate: NSObjectProtocol {
  /// `peerID` invites this peer, with the inviter's `context` (nil when it sent none). Call
  /// `invitationHandler` once, from any thread, now or later: `(true, session)` joins
  /// `session` (whose ``MCSession/myPeerID`` must be the advertiser's peer), `(false, nil)`
  /// declines. It still works after ``MCNearbyServiceAdvertiser/stopAdvertisingPeer()``, which
  /// may be called here, before or after it. Unanswered, the invitation expires at the
  /// inviter's timeout.
  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID,
    withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void)

  /// Advertising could not start: ``MCError`` `unavailable` when avahi-daemon or the system
  /// bus is not running, `invalidParameter` when the discovery info cannot be published.
  /// Nothing of the advertiser runs then; a later start tries again. Optional.
  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: any Error)
}

extension MCNearbyServiceAdvertiserDelegate {
  /// Does nothing.
  public func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: any Error
  ) {}
}
