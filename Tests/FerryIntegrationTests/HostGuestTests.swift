import Foundation
import Synchronization
import Testing

@testable import Ferry

/// The seed's host/guest cases, for the library on loopback over real TLS: two peers inviting
/// each other at the same moment, connections reset in the middle of the handshake (the whole
/// flow starts again and works), a link dropped or stalled mid-transfer (a retrying send
/// reconnects and resumes), and a reconnect into a session that is otherwise full.
@Suite(
  "Host and guest",
  // The 50 rounds of simultaneousConnect take over half a second each, seconds on a loaded
  // machine.
  .timeLimit(.minutes(5)), .endsItsProcesses)
struct HostGuestTests {
  /// A peer that accepts every invitation into its session.
  struct Node {
    let identity: Identity
    let session: Session
    let listener: InvitationListener
    let port: UInt16
    let accepting: Task<Void, Never>
    /// How many invitations arrived.
    let invitations = Counter()

    /// `accepting`: false leaves every invitation unanswered.
    init(
      _ name: String, identity: Identity = .generate(), timeouts: ConnectionTimeouts = .init(),
      maximumPending: Int = 8, accepting answers: Bool = true
    ) async throws {
      self.identity = identity
      listener = InvitationListener(
        identity: identity, displayName: name, timeouts: timeouts, knownPeers: nil,
        maximumPending: maximumPending)
      port = try await listener.start(port: 0)
      session = try Session(identity: identity, displayName: name, timeouts: timeouts)
      accepting = Task { [listener, session, invitations] in
        for await invitation in listener.invitations {
          invitations.value.add(1, ordering: .relaxed)
          if answers { try? await invitation.accept(into: session) }
        }
      }
    }

    var fingerprint: Fingerprint { identity.fingerprint }

    func connected(to other: Node) -> Bool {
      session.connectedPeers.contains { $0.fingerprint == other.fingerprint }
    }

    func stop() {
      accepting.cancel()
      session.close()
      listener.stop()
    }
  }

  /// Sends one message from `from` to `to` and waits for it there.
  func exchange(from: Session, to: Session, text: String) async throws {
    var messages = to.messages.makeAsyncIterator()
    let peer = try #require(from.connectedPeers.first { $0.fingerprint == to.myPeer.fingerprint })
    try await from.send(Array(text.utf8), to: [peer])
    let received = try #require(await messages.next())
    #expect(received.data == Array(text.utf8))
  }

  @Test(
    "host and guest invite each other at the same moment, 50 times: one link stays, both connected"
  )
  func simultaneousConnect() async throws {
    for round in 0..<50 {
      let host = try await Node("host")
      let guest = try await Node("guest")
      defer {
        host.stop()
        guest.stop()
      }
      let hostStates = EventRecorder(host.session.stateChanges)
      let guestStates = EventRecorder(guest.session.stateChanges)
      // Each side notes the code of the link it has as soon as its invitation returns: the
      // link an application would start using at once.
      let byHost = Task {
        let peer = try await host.session.invite(
          host: "127.0.0.1", port: guest.port, expecting: guest.fingerprint)
        return host.session.verificationCode(with: peer)
      }
      let byGuest = Task {
        let peer = try await guest.session.invite(
          host: "127.0.0.1", port: host.port, expecting: host.fingerprint)
        return guest.session.verificationCode(with: peer)
      }
      let results = [await byHost.result, await byGuest.result]
      var firstCodes: [VerificationCode?] = []
      for outcome in results {
        switch outcome {
        case .success(let code): firstCodes.append(code)
        case .failure(let error): Issue.record("round \(round): \(error)")
        }
      }
      // Both settle on the same link, and it is the first one each side had: no link an
      // application may already use is replaced by the crossing one (what was in flight on it
      // would fail).
      try await Task.sleep(for: .milliseconds(500))
      let (hostSees, guestSees) = (host.connected(to: guest), guest.connected(to: host))
      #expect(hostSees && guestSees, "round \(round)")
      let codes = [
        host.session.verificationCode(with: guest.session.myPeer),
        guest.session.verificationCode(with: host.session.myPeer),
      ]
      #expect(codes[0] != nil && codes[0] == codes[1], "round \(round): \(codes)")
      #expect(firstCodes == codes, "round \(round): first \(firstCodes), kept \(codes)")
      try await exchange(from: host.session, to: guest.session, text: "to the guest \(round)")
      try await exchange(from: guest.session, to: host.session, text: "to the host \(round)")
      #expect(host.session.connectedPeers.count == 1 && guest.session.connectedPeers.count == 1)
      // What each side last said of the other is "connected" (a second link's "connecting"
      // is not reported while the first is up).
      for states in [hostStates, guestStates] {
        #expect(states.all.last?.element.state == .connected, "\(states.all.map(\.element))")
      }
    }
  }

  @Test(
    "crossed invitations: the smaller end waits for its own invitation only until 2 s before the other's expires"
  )
  func crossingWaitIsBounded() async throws {
    var (first, second) = (Identity.generate(), Identity.generate())
    if !first.fingerprint.bytes.lexicographicallyPrecedes(second.fingerprint.bytes) {
      swap(&first, &second)
    }
    let smaller = try await Node("smaller", identity: first)
    let larger = try await Node("larger", identity: second, accepting: false)
    defer {
      smaller.stop()
      larger.stop()
    }
    // The smaller end invites the larger, which never answers; then the larger invites it.
    let bySmaller = Task {
      try await smaller.session.invite(
        host: "127.0.0.1", port: larger.port, expecting: larger.fingerprint, timeout: .seconds(60))
    }
    defer { bySmaller.cancel() }
    // The smaller end's invitation is there, unanswered.
    try await waitUntil { larger.invitations.value.load(ordering: .relaxed) == 1 }
    let started = ContinuousClock.now
    let peer = try await larger.session.invite(
      host: "127.0.0.1", port: smaller.port, expecting: smaller.fingerprint, timeout: .seconds(6))
    let took = ContinuousClock.now - started
    #expect(peer.fingerprint == smaller.fingerprint)
    // Held while the smaller end's own invitation was under way, and let go 2 s before the
    // larger end's 6 s expire — not when its own 60 s end, as before the bound. The ACCEPT came
    // in time (else the invite throws), but on a loaded machine the answer and the timers are
    // handled late (7.8 s once, in CI with a build beside it): the bound is the 6 s and the
    // margin, which still tells it from a wait for the smaller end's own 60 s.
    #expect(took >= .seconds(3) && took < .seconds(6) + Harness.margin, "\(took)")
    #expect(smaller.connected(to: larger) && larger.connected(to: smaller))
  }

  @Test(
    "a connection reset mid-handshake (TCP, TLS, HELLO, INVITE): a retryable error, nothing left pending, the next invitation works"
  )
  func resetMidHandshake() async throws {
    // One pending invitation at most: one the reset left behind would make the next "busy".
    let guest = try await Node("guest", maximumPending: 1)
    // The inviter's handshake deadline is 30 s, far from any reset: a failure that comes from
    // the reset itself is then told from one that comes from the deadline by its kind, not by
    // timing it (a loaded machine stalled the event loop past the default 5 s once, in CI).
    var slow = ConnectionTimeouts()
    slow.handshake = .seconds(30)
    let host = try Session(identity: Identity.generate(), displayName: "host", timeouts: slow)
    let proxy = CuttableProxy(to: guest.port)
    defer {
      proxy.stop()
      host.close()
      guest.stop()
    }
    // How many bytes the inviter sends until it is connected (TLS, HELLO, INVITE): the least of
    // three, since on a loaded machine a frame sent just after connecting can be counted too
    // (a cut inside that frame would then "connect through a reset").
    var handshake = Int.max
    for _ in 0..<3 {
      let before = proxy.bytesFromClients
      let measured = try await host.invite(
        host: "127.0.0.1", port: proxy.port, expecting: guest.fingerprint)
      handshake = min(handshake, proxy.bytesFromClients - before)
      host.disconnect(measured)
      try await waitUntil { guest.session.connectedPeers.isEmpty }
    }
    // Reset before anything, inside the ClientHello, in the client's certificate flight, and
    // in the encrypted HELLO and INVITE that end the handshake.
    let cuts = [0, 1] + stride(from: 0.05, to: 1, by: 0.08).map { Int(Double(handshake) * $0) }
    for bytes in cuts {
      proxy.resetAfter(bytes: bytes)
      let started = ContinuousClock.now
      do {
        let peer = try await host.invite(
          host: "127.0.0.1", port: proxy.port, expecting: guest.fingerprint,
          timeout: .seconds(60))
        Issue.record("connected through a connection reset after \(bytes) of \(handshake) bytes")
        host.disconnect(peer)
      } catch {
        #expect(RetryPolicy.isRetryable(error), "after \(bytes) bytes: \(error)")
        // Noticed from the reset itself: not the 30 s handshake deadline (nor the 60 s
        // invitation's), whatever the machine's load.
        let took = ContinuousClock.now - started
        #expect(
          error != .timedOut,
          "after \(bytes) of \(handshake) bytes: \(error) after \(took); proxy accepted \(proxy.accepted)"
        )
      }
      proxy.resetAfter(bytes: nil)
      // The whole flow again, through the same path: it works.
      let peer = try await host.invite(
        host: "127.0.0.1", port: proxy.port, expecting: guest.fingerprint, timeout: .seconds(10))
      #expect(peer.fingerprint == guest.fingerprint)
      host.disconnect(peer)
      try await waitUntil { !guest.session.connectedPeers.contains { $0 == host.myPeer } }
    }
  }

  @Test(
    "a peer already connected reconnects into a session of 8: its new link takes the old one's place"
  )
  func reconnectIntoFullSession() async throws {
    let hub = try Session(identity: Identity.generate(), displayName: "hub")
    var nodes: [Node] = []
    defer {
      hub.close()
      for node in nodes { node.stop() }
    }
    for index in 0..<(Session.maximumPeers - 1) {
      let node = try await Node("node \(index)")
      nodes.append(node)
      _ = try await hub.invite(host: "127.0.0.1", port: node.port, expecting: node.fingerprint)
    }
    #expect(hub.connectedPeers.count == Session.maximumPeers - 1)
    // A stranger does not fit…
    let stranger = try await Node("stranger")
    nodes.append(stranger)
    await #expect(throws: InvitationError.sessionFull) {
      try await hub.invite(host: "127.0.0.1", port: stranger.port, expecting: stranger.fingerprint)
    }
    // …but a member whose link the hub still holds (say it stalled) reconnects in its place.
    let again = try await hub.invite(
      host: "127.0.0.1", port: nodes[3].port, expecting: nodes[3].fingerprint)
    #expect(again.fingerprint == nodes[3].fingerprint)
    try await Task.sleep(for: .milliseconds(300))
    #expect(hub.connectedPeers.count == Session.maximumPeers - 1)
    try await exchange(from: nodes[3].session, to: hub, text: "still here")
  }

  /// A receiving node behind a proxy, a sending session, and a file of `size` bytes.
  struct RetriedSend {
    let guest: Node
    let host: Session
    let proxy: CuttableProxy
    let file: URL
    let destination: URL

    init(size: Int) async throws {
      // Dead after 2 s of silence, so a stall is noticed in the test's time.
      let timeouts = ConnectionTimeouts(
        handshake: .seconds(5), heartbeatInterval: .milliseconds(500), deadAfter: .seconds(2))
      guest = try await Node("guest", timeouts: timeouts)
      destination = try temporaryDirectory("retried-dst")
      guest.session.receiveResources(ReceiveOptions(destination: destination))
      host = try Session(identity: Identity.generate(), displayName: "host", timeouts: timeouts)
      proxy = CuttableProxy(to: guest.port)
      file = try temporaryDirectory("retried-src").appendingPathComponent("big.bin")
      try writeFile(file, size: size, seed: UInt64(size))
    }

    /// Sends the file through the proxy, retrying; `fault` runs once a quarter has arrived.
    func send(fault: @escaping @Sendable () async -> Void) async throws -> (
      [FileResult], retries: Int
    ) {
      let peer = try await host.invite(
        host: "127.0.0.1", port: proxy.port, expecting: guest.fingerprint)
      let (host, proxy, key, size) = (self.host, self.proxy, guest.fingerprint, try fileSize())
      var retries = 0
      let reconnect: @Sendable (Duration) async throws(InvitationError) -> PeerID = { left in
        try await host.invite(
          host: "127.0.0.1", port: proxy.port, expecting: key, timeout: min(left, .seconds(5)))
      }
      let results = try await host.sendResources(
        [ResourceItem(url: file, path: "big.bin")], to: peer,
        retrying: RetryPolicy(retryFor: .seconds(20), firstDelay: .milliseconds(200)),
        reconnect: reconnect
      ) { event in
        switch event {
        case .sending(let transfer, let attempt):
          guard attempt == 1 else { break }
          Task {
            for await snapshot in transfer.progress.snapshots
            where snapshot.bytes >= Int64(size / 4) {
              return await fault()
            }
          }
        case .retrying:
          retries += 1
        }
      }
      return (results, retries)
    }

    func fileSize() throws -> Int {
      try FileManager.default.attributesOfItem(atPath: file.path)[.size] as! Int
    }

    func stop() {
      proxy.stop()
      host.close()
      guest.stop()
    }
  }

  @Test("a link reset mid-transfer: the library's retrying send reconnects and resumes")
  func retriedAfterReset() async throws {
    let size = 96 << 20
    let send = try await RetriedSend(size: size)
    defer { send.stop() }
    let proxy = send.proxy
    let (results, retries) = try await send.send { proxy.cut() }
    #expect(results.map(\.status) == [.stored])
    #expect(retries >= 1)
    #expect(proxy.accepted >= 2)
    #expect(
      try sha256(of: send.destination.appendingPathComponent("big.bin")) == sha256(of: send.file))
    // Resumed, not sent again: what crossed is the file once and a little more.
    #expect(Double(proxy.bytesFromClients) <= 1.3 * Double(size), "\(proxy.bytesFromClients)")
  }

  @Test("a link stalled mid-transfer: declared dead, the retrying send comes back when it clears")
  func retriedAfterStall() async throws {
    let size = 96 << 20
    let send = try await RetriedSend(size: size)
    defer { send.stop() }
    let proxy = send.proxy
    // Stalled until the sender, having declared the link dead, connects again: however long
    // a loaded machine takes to notice, the stall outlasts the old link.
    let (results, retries) = try await send.send {
      proxy.stall(true)
      try? await waitUntil { proxy.accepted >= 2 }
      proxy.stall(false)
    }
    #expect(results.map(\.status) == [.stored])
    #expect(retries >= 1)
    #expect(
      try sha256(of: send.destination.appendingPathComponent("big.bin")) == sha256(of: send.file))
    #expect(Double(proxy.bytesFromClients) <= 1.3 * Double(size), "\(proxy.bytesFromClients)")
  }
}

/// A count shared between tasks.
final class Counter: Sendable {
  let value = Atomic<Int>(0)
}

/// Polls `condition` every 20 ms for at most `timeout`.
func waitUntil(timeout: Duration = Harness.patience, _ condition: () -> Bool) async throws {
  let deadline = ContinuousClock.now + timeout
  while !condition() {
    guard ContinuousClock.now < deadline else {
      Issue.record("condition not met within \(timeout)")
      return
    }
    try await Task.sleep(for: .milliseconds(20))
  }
}
