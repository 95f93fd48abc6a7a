import Ferry
import FerryMultipeer
import Foundation
import Synchronization
import Testing

/// FerryMultipeer as a ported app uses it, against the loopback avahi-daemon and real TLS:
/// several apps in this process, each with its own peer, session, advertiser and browser.
@Suite(
  "FerryMultipeer against a real avahi-daemon", .timeLimit(.minutes(5)), .needsLocalAvahi,
  .serialized, .endsItsProcesses)
struct MultipeerLoopbackTests {
  /// One app: a peer, its session and delegates, an advertiser and a browser of `type`.
  final class App: Sendable {
    let peer: MCPeerID
    let session: MCSession
    let recorder: MultipeerRecorder
    let advertiser: MCNearbyServiceAdvertiser
    let browser: MCNearbyServiceBrowser

    init(
      _ name: String, type: String, answer: Bool? = true, moveResources: Bool = true,
      acceptCertificates: Bool = true
    ) {
      peer = MCPeerID(displayName: name)
      session = MCSession(peer: peer, securityIdentity: nil, encryptionPreference: .required)
      recorder = MultipeerRecorder(
        session: session, answer: answer, moveResources: moveResources,
        acceptCertificates: acceptCertificates)
      advertiser = MCNearbyServiceAdvertiser(
        peer: peer, discoveryInfo: ["app": name], serviceType: type)
      advertiser.delegate = recorder
      browser = MCNearbyServiceBrowser(peer: peer, serviceType: type)
      browser.delegate = recorder
    }

    func stop() {
      advertiser.stopAdvertisingPeer()
      browser.stopBrowsingForPeers()
      session.disconnect()
    }

    /// Browses until `name` is found.
    func find(_ name: String) async throws -> MCPeerID {
      browser.startBrowsingForPeers()
      await recorder.wait { _ in self.recorder.found(name) != nil }
      return try #require(recorder.found(name), "\(name) not found: \(recorder.calls)")
    }

    /// Whether `name`'s last state is `state`, waiting for it.
    func waitState(_ name: String, _ state: MCSessionState) async -> Bool {
      await recorder.wait { _ in self.recorder.states(of: name).last == state }
    }
  }

  /// A service type of its own for each test.
  func serviceType() -> String { Harness.uniqueServiceType("mc") }

  @Test(
    "found with discovery info, invited with a context, data both ways in order, a stream, a 30 MB resource moved, one left unmoved"
  )
  func wholeApp() async throws {
    let type = serviceType()
    let host = App("mc-host", type: type)
    let guest = App("mc-guest", type: type, moveResources: false)
    defer {
      host.stop()
      guest.stop()
    }
    host.advertiser.startAdvertisingPeer()
    let found = try await guest.find("mc-host")
    #expect(guest.recorder.calls.contains(.found("mc-host", info: ["app": "mc-host"])))
    // The app's own advertiser is never reported to its browser.
    guest.advertiser.startAdvertisingPeer()
    try await Task.sleep(for: .seconds(1))
    #expect(guest.recorder.found("mc-guest") == nil)

    guest.browser.invitePeer(
      found, to: guest.session, withContext: Data("hello".utf8), timeout: 30)
    #expect(await guest.waitState("mc-host", .connected))
    #expect(await host.waitState("mc-guest", .connected))
    #expect(guest.recorder.states(of: "mc-host") == [.connecting, .connected])
    #expect(host.recorder.states(of: "mc-guest") == [.connecting, .connected])
    #expect(
      host.recorder.calls.first { if case .invitation = $0 { true } else { false } }
        == .invitation("mc-guest", context: Data("hello".utf8)))
    #expect(host.recorder.calls.contains(.certificate("mc-guest", sha256Matches: true)))
    #expect(guest.session.connectedPeers == [found])
    let guestAtHost = try #require(host.session.connectedPeers.first)
    #expect(guestAtHost == guest.peer)

    // Data both ways, in order, each after connected.
    for index in 0..<50 {
      try guest.session.send(Data("g\(index)".utf8), toPeers: [found], with: .reliable)
      try host.session.send(Data("h\(index)".utf8), toPeers: [guestAtHost], with: .reliable)
    }
    func messages(_ calls: [MultipeerRecorder.Call], from name: String) -> [String] {
      calls.compactMap { call in
        if case .data(let peer, let data) = call, peer == name {
          return String(decoding: data, as: UTF8.self)
        }
        return nil
      }
    }
    #expect(await host.recorder.wait { messages($0, from: "mc-guest").count == 50 })
    #expect(await guest.recorder.wait { messages($0, from: "mc-host").count == 50 })
    #expect(messages(host.recorder.calls, from: "mc-guest") == (0..<50).map { "g\($0)" })
    #expect(messages(guest.recorder.calls, from: "mc-host") == (0..<50).map { "h\($0)" })
    let hostCalls = host.recorder.calls
    let connectedAt = try #require(hostCalls.firstIndex(of: .state("mc-guest", .connected)))
    let firstData = try #require(
      hostCalls.firstIndex { if case .data = $0 { true } else { false } })
    #expect(connectedAt < firstData)
    #expect(throws: MCError.self) {
      try guest.session.send(Data(count: 1 << 20 + 1), toPeers: [found], with: .reliable)
    }

    // A stream of 3 MB, written through the blocking OutputStream.
    let output = try guest.session.startStream(withName: "pipe", toPeer: found)
    output.open()
    let chunk = [UInt8](repeating: 7, count: 64 << 10)
    var written = 0
    while written < 3_000_000 {
      let count = output.write(chunk, maxLength: min(chunk.count, 3_000_000 - written))
      try #require(count > 0, "write failed: \(String(describing: output.streamError))")
      written += count
    }
    output.close()
    #expect(
      await host.recorder.wait { $0.contains(.stream("mc-guest", name: "pipe", bytes: 3_000_000)) })

    // A 30 MB resource: progress reaches 1.0, the host's delegate moves the file.
    let folder = try temporaryDirectory("mpc")
    defer { try? FileManager.default.removeItem(at: folder) }
    let big = folder.appendingPathComponent("big.bin")
    let content = Data((0..<30_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    try content.write(to: big)
    let done = Completion()
    let sent = guest.session.sendResource(at: big, withName: "photos/big.bin", toPeer: found) {
      done.finish($0)
    }
    let progress = try #require(sent)
    #expect(await done.wait() == "ok")
    #expect(progress.fractionCompleted == 1.0)
    // The sender's completion comes with the receiver's acknowledgement, before the host's
    // delegate has necessarily been called: waited for.
    #expect(
      await host.recorder.wait { calls in
        calls.contains {
          if case .finished("mc-guest", "photos/big.bin", _, nil) = $0 { true } else { false }
        }
      }, "\(host.recorder.calls)")
    let finished = host.recorder.calls.compactMap { call -> String? in
      if case .finished("mc-guest", "photos/big.bin", let movedTo, nil) = call { return movedTo }
      return nil
    }
    let moved = try #require(finished.first)
    #expect(FileManager.default.contents(atPath: moved) == content)
    #expect(host.recorder.calls.contains(.started("mc-guest", name: "photos/big.bin")))

    // A resource the delegate does not move is deleted once it returns.
    let small = folder.appendingPathComponent("small.txt")
    try Data("left behind".utf8).write(to: small)
    let second = Completion()
    _ = host.session.sendResource(at: small, withName: "note", toPeer: guestAtHost) {
      second.finish($0)
    }
    #expect(await second.wait() == "ok")
    #expect(
      await guest.recorder.wait {
        $0.contains(.finished("mc-host", name: "note", movedTo: nil, error: nil))
      })
    let handed = try #require(guest.recorder.handedURLs.withLock { $0.first })
    try await waitUntil { !FileManager.default.fileExists(atPath: handed.path) }

    // Sending to a peer not connected fails at once.
    let stranger = MCPeerID(displayName: "stranger")
    #expect(throws: MCError.self) {
      try guest.session.send(Data("x".utf8), toPeers: [stranger], with: .reliable)
    }
    let refused = Completion()
    #expect(
      guest.session.sendResource(at: small, withName: "x", toPeer: stranger) {
        refused.finish($0)
      } == nil)
    #expect(await refused.wait().contains("not connected"))

    guest.session.disconnect()
    #expect(await guest.waitState("mc-host", .notConnected))
    #expect(await host.waitState("mc-guest", .notConnected))
    #expect(guest.session.connectedPeers.isEmpty)
  }

  @Test("Apple's usual flow: browsing stopped as soon as the peer is found, then it is invited")
  func stopBrowsingThenInvite() async throws {
    let type = serviceType()
    let host = App("mc-stop-host", type: type)
    let guest = App("mc-stop-guest", type: type)
    defer {
      host.stop()
      guest.stop()
    }
    host.advertiser.startAdvertisingPeer()
    let found = try await guest.find("mc-stop-host")
    // Most apps stop browsing at once; the peer found stays invitable.
    guest.browser.stopBrowsingForPeers()
    guest.browser.invitePeer(found, to: guest.session, withContext: nil, timeout: 30)
    #expect(await guest.waitState("mc-stop-host", .connected), "\(guest.recorder.calls)")
    #expect(await host.waitState("mc-stop-guest", .connected), "\(host.recorder.calls)")
    // Advertising stopped once connected leaves the session connected.
    host.advertiser.stopAdvertisingPeer()
    try guest.session.send(Data("after the stops".utf8), toPeers: [found], with: .reliable)
    #expect(
      await host.recorder.wait { calls in
        calls.contains(.data("mc-stop-guest", Data("after the stops".utf8)))
      })
    #expect(guest.recorder.states(of: "mc-stop-host") == [.connecting, .connected])
  }

  @Test("declined, unanswered (timed out) and certificate-refused invitations end in notConnected")
  func refusals() async throws {
    let type = serviceType()
    let decliner = App("mc-no", type: type, answer: false)
    let silent = App("mc-silent", type: type, answer: nil)
    let picky = App("mc-picky", type: type, acceptCertificates: false)
    let guest = App("mc-asker", type: type)
    defer {
      for app in [decliner, silent, picky, guest] { app.stop() }
    }
    for app in [decliner, silent, picky] { app.advertiser.startAdvertisingPeer() }
    let no = try await guest.find("mc-no")
    let quiet = try await guest.find("mc-silent")
    let fussy = try await guest.find("mc-picky")

    guest.browser.invitePeer(no, to: guest.session, withContext: nil, timeout: 30)
    #expect(await guest.waitState("mc-no", .notConnected))
    #expect(guest.recorder.states(of: "mc-no") == [.connecting, .notConnected])

    let asked = ContinuousClock.now
    guest.browser.invitePeer(quiet, to: guest.session, withContext: nil, timeout: 5)
    #expect(await guest.waitState("mc-silent", .notConnected))
    let waited = ContinuousClock.now - asked
    // Not before the invitation's 5 s (half a second's leeway for where its timer starts), and
    // not later than those plus what a loaded machine adds.
    #expect(waited >= .seconds(4.5) && waited < .seconds(5) + Harness.margin, "took \(waited)")
    #expect(await silent.recorder.wait { $0.contains(.invitation("mc-asker", context: nil)) })

    guest.browser.invitePeer(fussy, to: guest.session, withContext: nil, timeout: 30)
    #expect(
      await picky.recorder.wait { $0.contains(.certificate("mc-asker", sha256Matches: true)) })
    #expect(await guest.waitState("mc-picky", .notConnected))
    #expect(await picky.waitState("mc-asker", .notConnected), "\(picky.recorder.calls)")
    #expect(picky.recorder.states(of: "mc-asker") == [.connecting, .notConnected])
    #expect(picky.session.connectedPeers.isEmpty)
  }

  @Test("three peers in one session; browsing and advertising stopped and started again")
  func threePeersAndRestarts() async throws {
    let type = serviceType()
    let host = App("mc-hub", type: type)
    let first = App("mc-one", type: type)
    let second = App("mc-two", type: type)
    defer {
      for app in [host, first, second] { app.stop() }
    }
    host.advertiser.startAdvertisingPeer()
    for app in [first, second] {
      let hub = try await app.find("mc-hub")
      app.browser.invitePeer(hub, to: app.session, withContext: nil, timeout: 30)
      #expect(await app.waitState("mc-hub", .connected))
    }
    #expect(await host.recorder.wait { _ in host.session.connectedPeers.count == 2 })
    try host.session.send(Data("all".utf8), toPeers: host.session.connectedPeers, with: .reliable)
    for app in [first, second] {
      #expect(await app.recorder.wait { $0.contains(.data("mc-hub", Data("all".utf8))) })
    }

    // Stop browsing, stop advertising: start both again and the hub is found again.
    first.browser.stopBrowsingForPeers()
    host.advertiser.stopAdvertisingPeer()
    // Withdrawn once a browser still running says it is gone.
    #expect(await second.recorder.wait { $0.contains(.lost("mc-hub")) })
    host.advertiser.startAdvertisingPeer()
    let before = first.recorder.calls.filter { $0 == .found("mc-hub", info: ["app": "mc-hub"]) }
    first.browser.startBrowsingForPeers()
    #expect(
      await first.recorder.wait {
        $0.filter { $0 == .found("mc-hub", info: ["app": "mc-hub"]) }.count == before.count + 1
      })
    // Lost: the hub stops advertising while the browser runs.
    host.advertiser.stopAdvertisingPeer()
    #expect(await first.recorder.wait { $0.contains(.lost("mc-hub")) })
  }

  @Test("mutual invitations within milliseconds, 50 times: always one connection, no flap")
  func mutualInvitations() async throws {
    let type = serviceType()
    let left = App("mc-left", type: type)
    let right = App("mc-right", type: type)
    defer {
      left.stop()
      right.stop()
    }
    left.advertiser.startAdvertisingPeer()
    right.advertiser.startAdvertisingPeer()
    let rightPeer = try await left.find("mc-right")
    let leftPeer = try await right.find("mc-left")
    var flaps = 0
    for round in 0..<50 {
      let leftBefore = left.recorder.states(of: "mc-right").count
      let rightBefore = right.recorder.states(of: "mc-left").count
      left.browser.invitePeer(rightPeer, to: left.session, withContext: nil, timeout: 30)
      right.browser.invitePeer(leftPeer, to: right.session, withContext: nil, timeout: 30)
      #expect(await left.waitState("mc-right", .connected), "round \(round)")
      #expect(await right.waitState("mc-left", .connected), "round \(round)")
      try await Task.sleep(for: .milliseconds(150))  // a flap would show by now
      #expect(left.session.connectedPeers == [rightPeer], "round \(round)")
      #expect(right.session.connectedPeers == [leftPeer], "round \(round)")
      #expect(left.session.ferrySession.connectedPeers.count == 1, "round \(round)")
      let leftStates = Array(left.recorder.states(of: "mc-right")[leftBefore...])
      let rightStates = Array(right.recorder.states(of: "mc-left")[rightBefore...])
      if leftStates != [.connecting, .connected] || rightStates != [.connecting, .connected] {
        flaps += 1
        Issue.record("round \(round): \(leftStates) / \(rightStates)")
      }
      left.session.disconnect()
      #expect(await left.waitState("mc-right", .notConnected), "round \(round)")
      #expect(await right.waitState("mc-left", .notConnected), "round \(round)")
    }
    print("mutual invitations: 50 rounds, \(flaps) with extra state reports")
  }
}

/// A completion handler's outcome, awaited by a test.
final class Completion: Sendable {
  private let outcome = Mutex<String?>(nil)

  func finish(_ error: (any Error)?) {
    outcome.withLock { $0 = $0 ?? error.map { "\($0)" } ?? "ok" }
  }

  /// "ok", the error's text, or "timed out" after 60 s.
  func wait() async -> String {
    for _ in 0..<3000 {
      if let value = outcome.withLock({ $0 }) { return value }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return "timed out"
  }
}
