import Ferry
import Foundation
import Testing

/// Invitations between a Browser and an Advertiser in this process, over real TLS on loopback,
/// with discovery through the loopback avahi-daemon.
@Suite("Invitations on loopback", .needsLocalAvahi)
struct InvitationLoopbackTests {
  @Test("found → invite → accept → connected on both ends, same fingerprints and code")
  func acceptFlow() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, advertiserSession, advertiserIdentity) = try await startAdvertiser(
      "alice", type: type)
    defer { advertiser.stop() }
    let browser = try Browser(serviceType: type)
    defer { browser.stop() }
    let events = EventRecorder(browser.events)
    let found = try await discover("alice", with: events)

    let inviterIdentity = makeIdentity()
    let inviterSession = try Session(identity: inviterIdentity, displayName: "bob")
    let inviterStates = EventRecorder(inviterSession.stateChanges)
    let advertiserStates = EventRecorder(advertiserSession.stateChanges)

    async let invited = browser.invite(found, to: inviterSession, context: Array("hello".utf8))
    let invitation = try #require(await nextInvitation(advertiser))
    #expect(invitation.peer.displayName == "bob")
    #expect(invitation.fingerprint == inviterIdentity.fingerprint)
    #expect(invitation.context == Array("hello".utf8))
    #expect(invitation.status == .new)
    try await invitation.accept(into: advertiserSession)
    let connectedPeer = try await invited

    #expect(connectedPeer.fingerprint == advertiserIdentity.fingerprint)
    #expect(connectedPeer.displayName == "alice")
    #expect(inviterSession.verificationCode(with: connectedPeer) == invitation.verificationCode)
    #expect(
      advertiserSession.verificationCode(with: invitation.peer) == invitation.verificationCode)
    #expect(inviterSession.connectedPeers == [connectedPeer])
    #expect(advertiserSession.connectedPeers == [invitation.peer])
    #expect(await inviterStates.first { $0.state == .connecting } != nil)
    #expect(await inviterStates.first { $0.state == .connected && $0.peer == connectedPeer } != nil)
    #expect(
      await advertiserStates.first { $0.state == .connected && $0.peer == invitation.peer } != nil)

    inviterSession.disconnect(connectedPeer)
    let gone = await advertiserStates.first { $0.state == .notConnected }
    #expect(gone != nil)
    #expect(advertiserSession.connectedPeers.isEmpty)
  }
}
