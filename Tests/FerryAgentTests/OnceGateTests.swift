import Ferry
import Testing

@testable import FerryAgent

/// `--once` and `--stdout`: a text is the one offer only while nothing else is.
@Suite("The --once gate and texts")
struct OnceGateTests {
  static let sender = Identity.generate().fingerprint

  @Test("a text claims an open gate, and then nothing else can")
  func textFirst() {
    let gate = OnceGate()
    #expect(gate.claimForText())
    #expect(!gate.claimForText())
    #expect(!gate.claimForDecision(from: Self.sender))
  }

  @Test("an offer being decided, accepted or waiting for its sender: a text is turned away")
  func offerFirst() {
    let gate = OnceGate()
    #expect(gate.claimForDecision(from: Self.sender))
    #expect(!gate.claimForText())
    gate.decided(accepted: true)
    #expect(!gate.claimForText())
  }

  @Test("a LocalSend stranger's offer refused before anyone decided is not the outcome")
  func strangerRefusal() {
    let gate = OnceGate()
    #expect(!gate.claimRefusal(from: Self.sender, whenOpen: false))
    #expect(gate.claimForDecision(from: Self.sender))
    gate.decided(accepted: true)
    // The accepted offer refused (say, for space) is.
    #expect(gate.claimRefusal(from: Self.sender, whenOpen: false))
  }

  @Test("an accepted offer that never started ends --once once, and not after it started")
  func neverStarted() {
    let gate = OnceGate()
    #expect(gate.claimForDecision(from: Self.sender))
    gate.decided(accepted: true)
    #expect(gate.acceptedButNeverStarted(from: Self.sender))
    #expect(!gate.acceptedButNeverStarted(from: Self.sender))
  }
}
