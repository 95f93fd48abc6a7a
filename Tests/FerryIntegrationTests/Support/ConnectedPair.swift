import Ferry
import Foundation

@testable import Ferry

/// Two sessions connected over real TLS on loopback, through the advertiser's listener but
/// without discovery (no avahi-daemon needed).
struct ConnectedPair {
  let inviter: Session
  let advertiser: Session
  /// The advertiser as the inviter sees it.
  let advertiserPeer: PeerID
  /// The inviter as the advertiser sees it.
  let inviterPeer: PeerID
  let listener: InvitationListener

  static func make(timeouts: ConnectionTimeouts = .init()) async throws -> ConnectedPair {
    let advertiserIdentity = Identity.generate()
    let listener = InvitationListener(
      identity: advertiserIdentity, displayName: "receiver", timeouts: timeouts, knownPeers: nil,
      maximumPending: 8)
    let port = try await listener.start(port: 0)
    let advertiser = try Session(
      identity: advertiserIdentity, displayName: "receiver", timeouts: timeouts)
    let inviter = try Session(
      identity: Identity.generate(), displayName: "sender", timeouts: timeouts)
    let accepting = Task { () -> PeerID? in
      for await invitation in listener.invitations {
        try await invitation.accept(into: advertiser)
        return invitation.peer
      }
      return nil
    }
    let advertiserPeer = try await inviter.invite(
      host: "127.0.0.1", port: port, expecting: advertiserIdentity.fingerprint)
    guard let inviterPeer = try await accepting.value else { throw TestFailure("no invitation") }
    return ConnectedPair(
      inviter: inviter, advertiser: advertiser, advertiserPeer: advertiserPeer,
      inviterPeer: inviterPeer, listener: listener)
  }

  func close() {
    inviter.close()
    advertiser.close()
    listener.stop()
  }
}
