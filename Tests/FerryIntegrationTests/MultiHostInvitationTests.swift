import Ferry
import Foundation
import Testing

/// Invitations across namespace hosts: this process (host a) browses and invites a
/// `ferry-test-peer` advertising on host b, over the bridge, with real TLS.
@Suite(
  "Invitations across namespace hosts", .timeLimit(.minutes(3)), .needsToRunOnHostA, .serialized,
  .endsItsProcesses)
struct MultiHostInvitationTests {
  /// Starts `ferry-test-peer advertise` on host b and finds it from here.
  func peerOnB(answer: String, maximumPending: Int = 8) async throws -> (
    process: ChildProcess, listening: [String: Any], found: DiscoveredPeer, browser: Browser
  ) {
    let type = Harness.uniqueServiceType()
    let name = "b-peer-\(Int.random(in: 1000...9999))"
    let process = try ChildProcess(
      Harness.on!,
      ["b", Harness.testPeerBinary, "advertise", name, type, answer, "\(maximumPending)"])
    let line = await process.waitForLine { $0.contains("\"listening\"") }
    let listening = try #require(line.flatMap { jsonObject($0.text) }, "\(process.stderr)")
    let browser = try Browser(serviceType: try ServiceType(type))
    let found = try await discover(name, with: EventRecorder(browser.events))
    return (process, listening, found, browser)
  }

  @Test("found → invite → accept → connected on both hosts, same fingerprints and code")
  func accept() async throws {
    let (peer, listening, found, browser) = try await peerOnB(answer: "accept")
    defer { peer.signal(SIGKILL) }
    #expect(found.addresses.contains { $0.ip == Harness.hostAddresses["b"] })
    let identity = makeIdentity()
    let session = try Session(identity: identity, displayName: "host-a")
    let remote = try await browser.invite(found, to: session, context: Array("multi".utf8))
    #expect(remote.fingerprint.hexString == listening["fingerprint"] as? String)
    let invitation = try #require(
      await peer.waitForLine { $0.contains("\"invitation\"") }.flatMap { jsonObject($0.text) })
    #expect(invitation["fingerprint"] as? String == identity.fingerprint.hexString)
    #expect(invitation["code"] as? String == session.verificationCode(with: remote)?.digits)
    #expect(invitation["context"] as? String == "multi")
    let connected = await peer.waitForLine {
      $0.contains("\"state\"") && $0.contains("\"connected\"")
    }
    #expect(connected != nil)
    #expect(session.connectedPeers == [remote])
  }

  @Test("decline with a reason, across hosts")
  func decline() async throws {
    let (peer, _, found, browser) = try await peerOnB(answer: "decline:busy cooking")
    defer { peer.signal(SIGKILL) }
    let session = try Session(identity: makeIdentity(), displayName: "host-a")
    await #expect(throws: InvitationError.declined(reason: "busy cooking")) {
      try await browser.invite(found, to: session)
    }
  }

  @Test("timeout, then the late accept on host b fails cleanly")
  func timeoutAndLateAccept() async throws {
    // The accept comes 10 s after the invitation arrived: always after the 5 s it waits,
    // however late the invitation arrives on a loaded machine.
    let (peer, _, found, browser) = try await peerOnB(answer: "accept-after:10")
    defer { peer.signal(SIGKILL) }
    let session = try Session(identity: makeIdentity(), displayName: "host-a")
    await #expect(throws: InvitationError.timedOut) {
      try await browser.invite(found, to: session, timeout: .seconds(5))
    }
    let failed = await peer.waitForLine { $0.contains("accept-failed") }
    #expect(failed?.text.contains("no longer pending") == true, "\(peer.stdout)")
    #expect(session.connectedPeers.isEmpty)
  }

  @Test("busy: beyond host b's pending cap")
  func busy() async throws {
    let (peer, _, found, browser) = try await peerOnB(answer: "ignore", maximumPending: 1)
    defer { peer.signal(SIGKILL) }
    let first = try Session(identity: makeIdentity(), displayName: "first")
    // Pending for as long as the test needs, taking host b's one slot once it arrived there.
    let pending = Task { try await browser.invite(found, to: first, timeout: .seconds(60)) }
    let arrived = await peer.waitForLine { $0.contains("\"invitation\"") }
    #expect(arrived != nil, "the first invitation never arrived: \(peer.stdout)")
    let second = try Session(identity: makeIdentity(), displayName: "second")
    await #expect(throws: InvitationError.busy) { try await browser.invite(found, to: second) }
    pending.cancel()
    _ = try? await pending.value
  }

  @Test("host b's cable pulled: the heartbeat reports it notConnected")
  func cablePulled() async throws {
    let (peer, _, found, browser) = try await peerOnB(answer: "accept")
    defer { peer.signal(SIGKILL) }
    let session = try Session(identity: makeIdentity(), displayName: "host-a")
    let states = EventRecorder(session.stateChanges)
    let remote = try await browser.invite(found, to: session)
    let pulled = ContinuousClock.now
    let down = try await run(Harness.on!, ["b", "ip", "link", "set", "mdns0", "down"])
    try #require(down.status == 0, "\(down.stderr)")
    // A failed test's way back, unawaited; a passing one brings the link up at its end and
    // waits for that, so that the next test finds it up.
    defer { Task { _ = try? await run(Harness.on!, ["b", "ip", "link", "set", "mdns0", "up"]) } }
    let gone = try #require(
      await states.first { $0.state == .notConnected && $0.peer == remote })
    print("cable pulled: notConnected after \(seconds(gone.record.time - pulled)) s")
    // ConnectionTimeouts: dead after 7 s of silence, checked at each 2 s heartbeat.
    #expect(gone.record.time - pulled < .seconds(9) + Harness.margin)
    let up = try await run(Harness.on!, ["b", "ip", "link", "set", "mdns0", "up"])
    #expect(up.status == 0, "\(up.stderr)")
  }
}
