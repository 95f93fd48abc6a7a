import Ferry
import Testing

@testable import FerryCLI

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
}
