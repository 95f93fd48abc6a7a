import Ferry
import FerryAgent
import Foundation
import Testing

@testable import FerryCLI

/// `--accept-from` and `--accept-trusted` (docs/SECURITY.md: fingerprints are identities).
@Suite("Receive policies")
struct ReceivePolicyTests {
  @Test("a KEY CHANGED sender is let in by its 64 digits only, not by a prefix peers.json resolves")
  func changedKeyNeedsFullFingerprint() throws {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-policy-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = KnownPeers(directory: directory)
    let alice = Identity.generate().fingerprint
    let mallory = Identity.generate().fingerprint
    try store.trust(alice, name: "alice")
    // Known, so that 16 digits of it resolve to its full fingerprint in peers.json.
    try store.recordSeen(PeerID(displayName: "mallory", fingerprint: mallory))
    let changed = try store.status(of: PeerID(displayName: "alice", fingerprint: mallory))
    #expect(changed == .changedKey(previous: alice))

    let prefix = String(mallory.hexString.prefix(Fingerprint.minimumPrefixDigits))
    let byPrefix = try ReceivePolicy.from(yes: false, acceptFrom: [prefix], knownPeers: store)
    #expect(byPrefix.decision(for: mallory, status: changed)?.accept == false)
    #expect(byPrefix.decision(for: mallory, status: changed)?.reason == "its key changed")
    #expect(byPrefix.decision(for: mallory, status: .known(trusted: false))?.accept == true)
    #expect(byPrefix.decision(for: alice, status: .known(trusted: true))?.accept == false)

    let byFull = try ReceivePolicy.from(
      yes: false, acceptFrom: [mallory.hexString], knownPeers: store)
    #expect(byFull.decision(for: mallory, status: changed)?.accept == true)

    let trusted = try ReceivePolicy.from(
      yes: false, acceptFrom: [], acceptTrusted: true, canAsk: false, knownPeers: store)
    #expect(trusted.decision(for: alice, status: .known(trusted: true))?.accept == true)
    #expect(trusted.decision(for: mallory, status: changed)?.accept == false)
  }
}
