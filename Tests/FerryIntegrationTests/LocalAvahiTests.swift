import Ferry
import Foundation
import Testing

/// Advertiser and Browser against a real avahi-daemon (loopback only), checked with Avahi's own
/// clients. Serialized: one test restarts the daemon.
@Suite(
  "Discovery against a real avahi-daemon", .timeLimit(.minutes(3)), .needsLocalAvahi, .serialized,
  .endsItsProcesses)
struct LocalAvahiTests {
  @Test("an Advertiser is seen by avahi-browse with its TXT records, and gone after stop()")
  func advertiserSeenByAvahiBrowse() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let peer = testPeer("adv")
    let advertiser = try Advertiser(
      peer: peer, serviceType: type, port: 4321, discoveryInfo: ["path": "a=b", "role": "test"])
    let name = try await advertiser.start()
    #expect(name == peer.displayName)
    #expect(advertiser.publishedName == name)

    // The daemon may resolve it a moment after it reported it published: browsed until it does.
    let lines = try await avahiBrowse(type, until: { $0.contains { $0[3] == name } }).filter {
      $0[3] == name
    }
    #expect(!lines.isEmpty, "avahi-browse did not resolve \(name)")
    for fields in lines {
      #expect(fields[2] == "IPv4")
      // avahi-browse resolves the host's address for any protocol: on lo that is either one.
      #expect(["127.0.0.1", "::1"].contains(fields[7]))
      #expect(fields[8] == "4321")
      let txt = fields[9]
      #expect(txt.contains("\"v=\(FerryProtocol.version)\""))
      #expect(txt.contains("\"fp=\(peer.fingerprint.hexString)\""))
      #expect(txt.contains("\"path=a=b\""))
      #expect(txt.contains("\"role=test\""))
    }

    let stoppedAt = ContinuousClock.now
    advertiser.stop()
    let after = try await avahiBrowse(type, until: { !$0.contains { $0[3] == name } })
    #expect(!after.contains { $0[3] == name }, "still published after stop(): \(after)")
    print("avahi-browse no longer lists \(name) \(seconds(.now - stoppedAt)) s after stop()")
  }

  @Test(
    "a service on a host that never answers: its resolvers time out, it is never reported, and the Browser goes on"
  )
  func unresolvableHost() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let browser = try Browser(serviceType: type)
    defer { browser.stop() }
    let events = EventRecorder(browser.events)
    // A host name with no address record: every resolution of the instance times out, and
    // the retry for any address family is made after the first resolver is freed (it once
    // read the freed resolver's name, and libdbus aborted the process).
    let ghost = try ChildProcess(
      "/usr/bin/avahi-publish-service",
      ["-H", "ghost-\(Int.random(in: 1000...9999)).local", "-s", "ghost", type.dnsSDType, "9"])
    defer { ghost.signal(SIGKILL) }
    try await Task.sleep(for: .seconds(12))
    #expect(!events.all.contains { $0.element.isFound("ghost") })
    let real = try ChildProcess(
      "/usr/bin/avahi-publish-service", ["-s", "real", type.dnsSDType, "10"])
    defer { real.signal(SIGKILL) }
    #expect(await events.first { $0.isFound("real") } != nil)
  }

  @Test("the Browser finds a service published by avahi-publish-service and loses it on exit")
  func browserFindsForeignPublisher() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let browser = try Browser(serviceType: type)
    defer { browser.stop() }
    let events = EventRecorder(browser.events)
    let fingerprint = randomFingerprint()
    let name = "avahi pub \(Int.random(in: 1000...9999))"
    let publisher = try ChildProcess(
      "/usr/bin/avahi-publish-service",
      ["-s", name, type.dnsSDType, "4242", "v=1", "fp=\(fingerprint.hexString)", "k=v=w", "ü=ö"])
    let foreign = try ChildProcess(
      "/usr/bin/avahi-publish-service", ["-s", "not ferry", type.dnsSDType, "631", "rp=queue"])
    defer { foreign.signal(SIGKILL) }

    let found = await events.first { $0.isFound(name) }
    try #require(found != nil, "Browser never found \(name); events: \(events.all.map(\.element))")
    let peer = found!.record.element.peer
    #expect(peer.port == 4242)
    #expect(
      peer.addresses.contains(DiscoveredAddress(family: .ipv4, ip: "127.0.0.1", interface: "lo")))
    #expect(peer.peerID?.fingerprint == fingerprint)
    #expect(peer.peerID?.displayName == name)
    #expect(peer.info.protocolVersion == 1)
    #expect(peer.info.values["k"] == "v=w")
    #expect(peer.info.values["ü"] == "ö")
    #expect(peer.hostName == "ferry-local.local")

    let other = await events.first { $0.isFound("not ferry") }
    #expect(other?.record.element.peer.peerID == nil)
    #expect(other?.record.element.peer.info.values == ["rp": "queue"])
    #expect(Set(browser.peers.map(\.name)) == [name, "not ferry"])

    let stopAt = ContinuousClock.now
    publisher.signal(SIGTERM)
    _ = await publisher.waitForExit()
    let lost = await events.first(after: found!.index) { $0.isLost(name) }
    try #require(lost != nil, "Browser never reported \(name) lost")
    print("lost \(seconds(lost!.record.time - stopAt)) s after avahi-publish-service exited")
    #expect(lost!.record.time - stopAt < .seconds(10))
    #expect(browser.peers.map(\.name) == ["not ferry"])
  }

  @Test(
    "an Advertiser let go of as soon as it is published: its deinit never runs on Avahi's thread")
  func droppedAtOnce() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    // The publication's callback used to hold the advertiser while it resumed start(): let go
    // of at once, its last reference could be dropped there, and deinit stopped (and joined)
    // the poll thread from itself — an abort or a hang.
    for round in 0..<20 {
      let name = try await Advertiser(peer: testPeer("brief\(round)"), serviceType: type, port: 1)
        .start()
      #expect(name.hasPrefix("brief\(round)"))
    }
  }

  @Test("a Browser stopped and started again finds the peers again, on a new events sequence")
  func browserRestarts() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, _, _) = try await startAdvertiser("restart-me", type: type)
    defer { advertiser.stop() }
    let browser = try Browser(serviceType: type)
    defer { browser.stop() }
    _ = try await discover("restart-me", with: EventRecorder(browser.events))
    browser.stop()
    #expect(!browser.isBrowsing)
    #expect(browser.peers.isEmpty)
    try browser.start()
    try browser.start()  // already browsing: nothing more
    #expect(browser.isBrowsing)
    let second = EventRecorder(browser.events)
    _ = try await discover("restart-me", with: second)
    #expect(browser.peers.map(\.name) == ["restart-me"])
    // The second run's sequence ends with it: its reader is not left waiting.
    browser.stop()
    try await waitUntil { second.isFinished }
    #expect(second.isFinished)
  }

  @Test(
    "an Advertiser stopped and started again is found again on its port, with new sequences that take new invitations"
  )
  func advertiserRestarts() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, hostSession, _) = try await startAdvertiser("adv-again", type: type)
    defer { advertiser.stop() }
    let firstPort = advertiser.port
    #expect(advertiser.isAdvertising)
    let browser = try Browser(serviceType: type)
    defer { browser.stop() }
    let events = EventRecorder(browser.events)
    _ = try await discover("adv-again", with: events)

    let firstInvitations = advertiser.invitations
    let firstEvents = EventRecorder(advertiser.events)
    advertiser.stop()
    #expect(!advertiser.isAdvertising)
    #expect(await events.first(where: { $0.isLost("adv-again") }) != nil)
    // The stopped run's sequences end: their readers are not left waiting.
    var drained = firstInvitations.makeAsyncIterator()
    #expect(await drained.next() == nil)
    try await waitUntil { firstEvents.isFinished }
    #expect(firstEvents.isFinished)

    let name = try await advertiser.start()
    #expect(name == "adv-again")
    #expect(advertiser.isAdvertising)
    #expect(advertiser.port == firstPort, "a restarted advertiser keeps its port while it is free")
    let found = try await discover("adv-again", with: events)
    #expect(found.port == firstPort)

    let guest = try Session(identity: makeIdentity(), displayName: "guest-again")
    defer { guest.close() }
    async let invited = browser.invite(found, to: guest, context: [7])
    var invitations = advertiser.invitations.makeAsyncIterator()
    let invitation = try #require(await invitations.next())
    #expect(invitation.context == [7])
    try await invitation.accept(into: hostSession)
    #expect(try await invited.fingerprint == hostSession.myPeer.fingerprint)
  }

  @Test("two Advertisers with the same name both appear, one renamed the Avahi way")
  func collidingNames() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let peer = testPeer("twin")
    let first = try Advertiser(peer: peer, serviceType: type, port: 1111)
    let second = try Advertiser(peer: peer, serviceType: type, port: 2222)
    defer {
      first.stop()
      second.stop()
    }
    let secondEvents = EventRecorder(second.events)
    let firstName = try await first.start()
    let secondName = try await second.start()
    #expect(firstName == peer.displayName)
    #expect(secondName == "\(peer.displayName) #2")
    let renamed = await secondEvents.first {
      $0 == .renamed(from: peer.displayName, to: "\(peer.displayName) #2")
    }
    #expect(renamed != nil, "the rename was not reported: \(secondEvents.all.map(\.element))")

    let lines = try await avahiBrowse(type, until: { $0.contains { $0[3] == secondName } })
    #expect(lines.contains { $0[3] == firstName && $0[8] == "1111" })
    #expect(lines.contains { $0[3] == secondName && $0[8] == "2222" }, "\(lines)")
  }

  @Test(
    "after avahi-daemon restarts, the Advertiser re-registers and the Browser finds it again",
    .enabled(
      if: Harness.environment["FERRY_TEST_RESTART_ALONE"] == "1",
      "restarts the shared avahi-daemon, so scripts/test runs it in a test process of its own"))
  func daemonRestart() async throws {
    let restart = try #require(Harness.restartAvahi)
    let type = try ServiceType(Harness.uniqueServiceType())
    let peer = testPeer("restart")
    let advertiser = try Advertiser(peer: peer, serviceType: type, port: 3333)
    defer { advertiser.stop() }
    let advertiserEvents = EventRecorder(advertiser.events)
    let browser = try Browser(serviceType: type)
    defer { browser.stop() }
    let browserEvents = EventRecorder(browser.events)
    _ = try await advertiser.start()
    let found = await browserEvents.first { $0.isFound(peer.displayName) }
    try #require(found != nil)

    let result = try await run(restart, [])
    try #require(result.status == 0, "restart failed: \(result.stderr)")

    let disconnected = await advertiserEvents.first {
      if case .daemonDisconnected = $0 { return true }
      return false
    }
    #expect(disconnected != nil)
    let republished = await advertiserEvents.first(after: disconnected?.index ?? 0) {
      $0 == .published(name: peer.displayName)
    }
    #expect(republished != nil, "not re-published: \(advertiserEvents.all.map(\.element))")
    let lost = await browserEvents.first(after: found!.index) { $0.isLost(peer.displayName) }
    #expect(lost != nil)
    let refound = await browserEvents.first(after: lost?.index ?? 0) {
      $0.isFound(peer.displayName)
    }
    #expect(refound != nil, "not found again: \(browserEvents.all.map(\.element))")
    let lines = try await avahiBrowse(type, until: { $0.contains { $0[3] == peer.displayName } })
    #expect(lines.contains { $0[3] == peer.displayName && $0[8] == "3333" })
  }

  @Test(
    "ferry receive started while avahi-daemon is down advertises as soon as it comes up",
    .enabled(
      if: Harness.environment["FERRY_TEST_RESTART_ALONE"] == "1",
      "stops the shared avahi-daemon, so scripts/test runs it in a test process of its own"))
  func daemonRestartUnderReceive() async throws {
    // Down for 30 s: the receiver's start-up on a loaded machine has to fit in the gap.
    let restart = try ChildProcess(try #require(Harness.restartAvahi), ["30"])
    defer { restart.signal(SIGKILL) }
    try #require(await restart.waitForLine { $0 == "stopped" } != nil)
    let type = Harness.uniqueServiceType()
    let name = "late-\(UUID().uuidString.prefix(6))"
    let receiver = try ChildProcess.ferry(
      [
        "receive", "--yes", "--json", "--dir", NSTemporaryDirectory(), "--service", type,
        "--name", name,
      ], environment: ["FERRY_HOME": Harness.freshFerryHome()])
    defer { receiver.signal(SIGKILL) }
    let unavailable = await receiver.waitForLine { $0.contains("\"discovery-unavailable\"") }
    #expect(unavailable != nil, "\(receiver.stderr)")
    #expect(await restart.waitForExit() == 0, "\(restart.stderr)")

    let advertised = await receiver.waitForLine(timeout: .seconds(15)) {
      jsonObject($0)?["event"] as? String == "advertising"
        && jsonObject($0)?["discoverable"] as? Bool == true
    }
    #expect(advertised.flatMap { jsonObject($0.text)?["name"] as? String } == name)
    let lines = try await avahiBrowse(
      try ServiceType(type), until: { $0.contains { $0[3] == name } })
    #expect(lines.contains { $0[3] == name }, "\(lines)")
    receiver.signal(SIGINT)
    #expect(await receiver.waitForExit() == 130)
  }
}
