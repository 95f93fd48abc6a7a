import Ferry
import Foundation
import Testing

/// Invitations between a Browser and an Advertiser in this process, over real TLS on loopback,
/// with discovery through the loopback avahi-daemon.
@Suite("Invitations on loopback", .timeLimit(.minutes(3)), .needsLocalAvahi, .endsItsProcesses)
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

    let shown = ShownCodes()
    async let invited = browser.invite(
      found, to: inviterSession, context: Array("hello".utf8), onVerificationCode: shown.record)
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
    // The inviter had it before the answer, once.
    #expect(shown.all == [invitation.verificationCode])
    #expect(inviterSession.connectedPeers == [connectedPeer])
    #expect(advertiserSession.connectedPeers == [invitation.peer])
    #expect(await inviterStates.first { $0.state == .connecting } != nil)
    #expect(
      await inviterStates.first { $0.state == .connected && $0.peer == connectedPeer } != nil)
    #expect(
      await advertiserStates.first { $0.state == .connected && $0.peer == invitation.peer } != nil)
    // The accepting side reports connecting too, first: as MultipeerConnectivity does.
    #expect(
      advertiserStates.all.prefix(2).map(\.element.state) == [.connecting, .connected],
      "\(advertiserStates.all.map(\.element))")

    inviterSession.disconnect(connectedPeer)
    let gone = await advertiserStates.first { $0.state == .notConnected }
    #expect(gone != nil)
    #expect(advertiserSession.connectedPeers.isEmpty)
    #expect(await inviterStates.first { $0.state == .notConnected } != nil)
  }

  @Test("a declined invitation reports the reason to the inviter")
  func decline() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, _, identity) = try await startAdvertiser("decliner", type: type)
    defer { advertiser.stop() }
    let session = try Session(identity: makeIdentity(), displayName: "asker")
    let result = Task {
      try await session.invite(
        host: "127.0.0.1", port: advertiser.port, expecting: identity.fingerprint)
    }
    let invitation = try #require(await nextInvitation(advertiser))
    invitation.decline(reason: "not now, thanks")
    await #expect(throws: InvitationError.declined(reason: "not now, thanks")) {
      try await result.value
    }
    #expect(session.connectedPeers.isEmpty)
  }

  @Test("an unanswered invitation times out; a late accept then fails cleanly")
  func timeoutAndLateAccept() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, advertiserSession, identity) = try await startAdvertiser("slow", type: type)
    defer { advertiser.stop() }
    let session = try Session(identity: makeIdentity(), displayName: "impatient")
    let started = ContinuousClock.now
    let result = Task {
      try await session.invite(
        host: "127.0.0.1", port: advertiser.port, expecting: identity.fingerprint,
        timeout: .seconds(5))
    }
    let invitation = try #require(await nextInvitation(advertiser))
    await #expect(throws: InvitationError.timedOut) { try await result.value }
    let waited = ContinuousClock.now - started
    // Its 5 s, plus what a loaded machine adds.
    #expect(
      waited >= .seconds(5) && waited < .seconds(5) + Harness.margin, "timed out after \(waited)")
    // The advertiser learns of the withdrawal from the inviter: waited for.
    try await waitUntil { !invitation.isPending }
    await #expect(throws: InvitationError.expired) {
      try await invitation.accept(into: advertiserSession)
    }
    #expect(advertiserSession.connectedPeers.isEmpty)
  }

  @Test("beyond the pending-invitation cap the advertiser answers busy")
  func busy() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, _, identity) = try await startAdvertiser(
      "popular", type: type, maximumPending: 1)
    defer { advertiser.stop() }
    let first = try Session(identity: makeIdentity(), displayName: "first")
    let firstResult = Task {
      try await first.invite(
        host: "127.0.0.1", port: advertiser.port, expecting: identity.fingerprint,
        timeout: .seconds(30))
    }
    // Pending until declined below: with a short timeout, a loaded machine let it expire
    // before the second invitation arrived, which then found a free slot.
    let pending = try #require(await nextInvitation(advertiser))
    let second = try Session(identity: makeIdentity(), displayName: "second")
    await #expect(throws: InvitationError.busy) {
      try await second.invite(
        host: "127.0.0.1", port: advertiser.port, expecting: identity.fingerprint)
    }
    pending.decline()
    _ = try? await firstResult.value
  }

  @Test("a certificate that does not match the expected fingerprint fails authentication")
  func wrongFingerprint() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, _, _) = try await startAdvertiser("genuine", type: type)
    defer { advertiser.stop() }
    let session = try Session(identity: makeIdentity(), displayName: "careful")
    do {
      _ = try await session.invite(
        host: "127.0.0.1", port: advertiser.port, expecting: makeIdentity().fingerprint)
      Issue.record("connected to a peer with the wrong certificate")
    } catch {
      guard case .authenticationFailed = error else {
        Issue.record("expected authenticationFailed, got \(error)")
        return
      }
    }
    #expect(await nextInvitation(advertiser, timeout: .seconds(1)) == nil)
  }

  @Test("direct connection by HOST:PORT, with or without a named fingerprint")
  func direct() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, advertiserSession, identity) = try await startAdvertiser("direct", type: type)
    defer { advertiser.stop() }
    Task {
      while let invitation = await nextInvitation(advertiser, timeout: .seconds(60)) {
        try await invitation.accept(into: advertiserSession)
      }
    }
    let pinned = try Session(identity: makeIdentity(), displayName: "pinned")
    let peer = try await pinned.invite(
      host: "127.0.0.1", port: advertiser.port, expecting: identity.fingerprint)
    #expect(peer.fingerprint == identity.fingerprint)
    let trusting = try Session(identity: makeIdentity(), displayName: "tofu")
    let unpinned = try await trusting.invite(host: "::1", port: advertiser.port)
    #expect(unpinned.fingerprint == identity.fingerprint)
    #expect(advertiserSession.connectedPeers.count == 2)
    withExtendedLifetime((pinned, trusting)) {}
  }

  @Test("unreachable, too large a context, and a full session are distinct errors")
  func otherErrors() async throws {
    let session = try Session(identity: makeIdentity(), displayName: "x")
    do {
      _ = try await session.invite(host: "127.0.0.1", port: 1, timeout: .seconds(3))
      Issue.record("connected to port 1")
    } catch {
      guard case .unreachable = error else {
        Issue.record("expected unreachable, got \(error)")
        return
      }
    }
    await #expect(throws: InvitationError.contextTooLarge(byteCount: 65_537)) {
      try await session.invite(
        host: "127.0.0.1", port: 1, context: Array(repeating: 0, count: 65_537))
    }

    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, advertiserSession, identity) = try await startAdvertiser("host", type: type)
    defer { advertiser.stop() }
    Task {
      while let invitation = await nextInvitation(advertiser, timeout: .seconds(60)) {
        try? await invitation.accept(into: advertiserSession)
      }
    }
    var members: [Session] = []  // Held: a released session disconnects its peers.
    for index in 1..<Session.maximumPeers {
      let member = try Session(identity: makeIdentity(), displayName: "member\(index)")
      _ = try await member.invite(
        host: "127.0.0.1", port: advertiser.port, expecting: identity.fingerprint)
      members.append(member)
    }
    #expect(advertiserSession.connectedPeers.count == Session.maximumPeers - 1)
    let latecomer = try Session(identity: makeIdentity(), displayName: "latecomer")
    await #expect(throws: InvitationError.sessionFull) {
      try await latecomer.invite(
        host: "127.0.0.1", port: advertiser.port, expecting: identity.fingerprint)
    }
    #expect(members.count == Session.maximumPeers - 1)
  }

  @Test(
    "a peer that stops answering (SIGKILL, or SIGSTOP: frozen, socket still open) becomes notConnected within the heartbeat bound",
    arguments: [SIGKILL, SIGSTOP])
  func heartbeat(signal: Int32) async throws {
    let type = Harness.uniqueServiceType()
    let peer = try ChildProcess(
      Harness.testPeerBinary, ["advertise", "doomed", type, "accept"])
    defer { peer.signal(SIGKILL) }
    let listening = try #require(
      await peer.waitForLine { $0.contains("\"listening\"") }.flatMap { jsonObject($0.text) },
      "\(peer.stderr)")
    let port = try #require(listening["port"] as? Int)
    let session = try Session(identity: makeIdentity(), displayName: "survivor")
    let states = EventRecorder(session.stateChanges)
    let remote = try await session.invite(
      host: "127.0.0.1", port: UInt16(port),
      expecting: try Fingerprint(parsing: listening["fingerprint"] as! String))
    #expect(await peer.waitForLine { $0.contains("\"accepted\"") } != nil)

    let killedAt = ContinuousClock.now
    peer.signal(signal)
    let gone = try #require(
      await states.first { $0.state == .notConnected && $0.peer == remote })
    let noticed = gone.record.time - killedAt
    print(
      "peer stopped with signal \(signal): notConnected after \(seconds(noticed)) s "
        + "(\(gone.record.element.reason ?? ""))")
    // ConnectionTimeouts: dead after 7 s of silence, checked at each 2 s heartbeat (a killed
    // peer's socket closes at once), plus what a loaded machine adds.
    #expect(noticed < .seconds(9) + Harness.margin)
    peer.signal(SIGKILL)
    peer.signal(SIGCONT)
  }
}
