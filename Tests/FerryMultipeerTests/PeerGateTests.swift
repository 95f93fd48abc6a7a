import Ferry
import Testing

@testable import FerryMultipeer

/// The gate's order: what the delegate hears, whatever order Ferry's streams are read in.
struct PeerGateTests {
  let alice = try! PeerID(
    displayName: "alice", fingerprint: Fingerprint(bytes: Array(repeating: 1, count: 32)))

  /// The steps as text, for comparing.
  func describe(_ steps: [PeerGate<String>.Step]) -> [String] {
    steps.map { step in
      switch step {
      case .report(let peer, let state): "\(peer.displayName) \(state)"
      case .askCertificate(let peer, _): "ask \(peer.displayName)"
      case .deliver(let event): "deliver \(event)"
      case .drop(let event): "drop \(event)"
      case .disconnect(let peer): "disconnect \(peer.displayName)"
      case .awaitReplacement(let peer, _): "await \(peer.displayName)"
      }
    }
  }

  func question(_ steps: [PeerGate<String>.Step]) -> UInt64? {
    for case .askCertificate(_, let question) in steps { return question }
    return nil
  }

  @Test("data read before the connected report waits for it, then arrives in order")
  func dataBeforeConnected() {
    var gate = PeerGate<String>()
    #expect(describe(gate.received("m1", from: alice)) == ["alice connecting"])
    #expect(describe(gate.received("m2", from: alice)).isEmpty)
    let asked = gate.ferryReported(.connected, for: alice)
    #expect(describe(asked) == ["ask alice"])
    #expect(!gate.isConnected(alice.fingerprint))
    let answered = gate.certificateAnswered(true, for: alice, question: question(asked)!)
    #expect(describe(answered) == ["alice connected", "deliver m1", "deliver m2"])
    #expect(describe(gate.received("m3", from: alice)) == ["deliver m3"])
    #expect(gate.connected == [alice.fingerprint])
  }

  @Test("connecting is reported once, made up when Ferry reports connected first")
  func connectingOnce() {
    var gate = PeerGate<String>()
    #expect(describe(gate.attemptBegan(alice)) == ["alice connecting"])
    #expect(describe(gate.ferryReported(.connecting, for: alice)).isEmpty)
    #expect(describe(gate.attemptBegan(alice)).isEmpty)
    var other = PeerGate<String>()
    #expect(
      describe(other.ferryReported(.connected, for: alice)) == ["alice connecting", "ask alice"])
    #expect(describe(other.ferryReported(.connected, for: alice)).isEmpty)
  }

  @Test("a declined certificate disconnects, reports notConnected and drops what waited")
  func declined() {
    var gate = PeerGate<String>()
    _ = gate.received("m1", from: alice)
    let asked = gate.ferryReported(.connected, for: alice)
    let answered = gate.certificateAnswered(false, for: alice, question: question(asked)!)
    #expect(describe(answered) == ["disconnect alice", "alice notConnected", "drop m1"])
    #expect(describe(gate.received("m2", from: alice)) == ["drop m2"])
    #expect(describe(gate.ferryReported(.notConnected, for: alice)).isEmpty)
    // A second answer, or an answer to an old question, changes nothing.
    #expect(
      describe(gate.certificateAnswered(true, for: alice, question: question(asked)!)).isEmpty)
  }

  @Test("a failed attempt reports notConnected, unless the peer connected anyway")
  func failedAttempt() {
    var gate = PeerGate<String>()
    _ = gate.attemptBegan(alice)
    #expect(describe(gate.attemptEnded(alice, failed: true)) == ["alice notConnected"])
    #expect(describe(gate.attemptEnded(alice, failed: true)).isEmpty)
    _ = gate.attemptBegan(alice)
    let asked = gate.ferryReported(.connected, for: alice)
    _ = gate.certificateAnswered(true, for: alice, question: question(asked)!)
    // The crossed invitation lost, the other link won: still connected.
    #expect(describe(gate.attemptEnded(alice, failed: true)).isEmpty)
    #expect(gate.isConnected(alice.fingerprint))
  }

  @Test("crossed invitations: the losing attempt's failure waits for the other attempt")
  func crossed() {
    var gate = PeerGate<String>()
    #expect(describe(gate.attemptBegan(alice)) == ["alice connecting"])  // invited
    #expect(describe(gate.attemptBegan(alice)).isEmpty)  // and accepted alice's invitation
    #expect(describe(gate.ferryReported(.notConnected, for: alice)).isEmpty)  // one link lost
    #expect(describe(gate.attemptEnded(alice, failed: true)).isEmpty)
    let asked = gate.ferryReported(.connected, for: alice)
    #expect(describe(asked) == ["ask alice"])
    #expect(describe(gate.attemptEnded(alice, failed: false)).isEmpty)
    // Both failing: notConnected once, when the last one ends.
    var both = PeerGate<String>()
    _ = both.attemptBegan(alice)
    _ = both.attemptBegan(alice)
    #expect(describe(both.attemptEnded(alice, failed: true)).isEmpty)
    #expect(describe(both.attemptEnded(alice, failed: true)) == ["alice notConnected"])
  }

  @Test("after notConnected, late data of the ended link still arrives; a new link's waits")
  func endedThenAgain() {
    var gate = PeerGate<String>()
    let asked = gate.ferryReported(.connected, for: alice)
    _ = gate.certificateAnswered(true, for: alice, question: question(asked)!)
    #expect(describe(gate.ferryReported(.notConnected, for: alice)) == ["alice notConnected"])
    #expect(describe(gate.ferryReported(.notConnected, for: alice)).isEmpty)
    #expect(describe(gate.received("late", from: alice, linkAlive: false)) == ["deliver late"])
    #expect(gate.connected.isEmpty)
    // A new link's first event waits for its connected.
    #expect(describe(gate.received("new", from: alice)) == ["alice connecting"])
    #expect(describe(gate.ferryReported(.connected, for: alice)) == ["ask alice"])
  }

  @Test("notConnected while the certificate question is open drops what waited")
  func goneWhileAsking() {
    var gate = PeerGate<String>()
    _ = gate.received("m1", from: alice)
    let asked = gate.ferryReported(.connected, for: alice)
    #expect(
      describe(gate.ferryReported(.notConnected, for: alice)) == ["alice notConnected", "drop m1"])
    #expect(
      describe(gate.certificateAnswered(true, for: alice, question: question(asked)!)).isEmpty)
  }

  @Test(
    "a link the peer replaced keeps the peer connected while the newer one comes, or not for ever")
  func replaced() {
    var gate = PeerGate<String>()
    let asked = gate.ferryReported(.connected, for: alice)
    _ = gate.certificateAnswered(true, for: alice, question: question(asked)!)
    let waiting = gate.ferryReported(.notConnected, for: alice, replacedByPeer: true)
    #expect(describe(waiting) == ["await alice"])
    #expect(gate.isConnected(alice.fingerprint))
    #expect(describe(gate.received("m", from: alice)) == ["deliver m"])
    #expect(describe(gate.ferryReported(.connecting, for: alice)).isEmpty)
    #expect(describe(gate.ferryReported(.connected, for: alice)).isEmpty)
    guard case .awaitReplacement(_, let token) = waiting[0] else { return }
    #expect(describe(gate.replacementExpired(alice, token: token)).isEmpty)
    #expect(gate.isConnected(alice.fingerprint))
    // No newer link within the grace: notConnected then.
    let again = gate.ferryReported(.notConnected, for: alice, replacedByPeer: true)
    guard case .awaitReplacement(_, let second) = again[0] else { return }
    #expect(describe(gate.replacementExpired(alice, token: second)) == ["alice notConnected"])
    #expect(!gate.isConnected(alice.fingerprint))
  }

  @Test("events of a link that ended before it was reported are dropped, not held for ever")
  func deadLink() {
    var gate = PeerGate<String>()
    #expect(describe(gate.received("orphan", from: alice, linkAlive: false)) == ["drop orphan"])
    _ = gate.attemptBegan(alice)
    #expect(describe(gate.received("gone", from: alice, linkAlive: false)) == ["drop gone"])
  }

  @Test("more than 256 events waiting for one peer disconnect it")
  func heldCap() {
    var gate = PeerGate<String>()
    _ = gate.attemptBegan(alice)
    for index in 0..<PeerGate<String>.maximumHeld {
      #expect(describe(gate.received("m\(index)", from: alice)).isEmpty)
    }
    let steps = describe(gate.received("one too many", from: alice))
    #expect(steps.prefix(2) == ["disconnect alice", "alice notConnected"])
    #expect(steps.count == 2 + PeerGate<String>.maximumHeld + 1)
    #expect(describe(gate.drainAll()).isEmpty)
  }
}
