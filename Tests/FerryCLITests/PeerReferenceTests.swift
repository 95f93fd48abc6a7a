import Ferry
import FerryAgent
import Foundation
import Testing

@testable import FerryCLI

/// `--to NAME` for a peer trusted under a name of the user's (issue 25, item 4).
@Suite("Peer references")
struct PeerReferenceTests {
  @Test("a trusted peer's name stands for its key, whatever it advertises; others match by name")
  func nickname() throws {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-reference-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = KnownPeers(directory: directory)
    let office = Identity.generate().fingerprint
    let stranger = Identity.generate().fingerprint
    try store.recordSeen(PeerID(displayName: "alice-laptop", fingerprint: office))
    try store.trust(office, name: "Office box")
    // Seen again under the name it advertises: the name given with trust stays.
    try store.recordSeen(PeerID(displayName: "alice-laptop", fingerprint: office))
    #expect(try store.all().map(\.name) == ["Office box"])

    let reference = try PeerReference.parse(" office BOX", knownPeers: store)
      .resolvingNickname(in: store)
    #expect(reference == .nickname(" office BOX", keys: [office]))
    #expect(reference.matchesFingerprint(office))
    #expect(reference.alsoNamesKnownKeys)
    #expect(!reference.isKey)
    // Another key advertising the name is matched by name only: ambiguous beside the trusted
    // key, KEY CHANGED without it.
    #expect(!reference.matchesFingerprint(stranger))
    #expect(reference.matchesName("Office box"))
    #expect(
      try store.status(of: PeerID(displayName: "Office box", fingerprint: stranger))
        == .changedKey(previous: office))
    // A name no trusted peer has stays a name; so does a peer merely seen.
    try store.recordSeen(PeerID(displayName: "kitchen", fingerprint: stranger))
    for name in ["alice-laptop", "kitchen"] {
      let plain = try PeerReference.parse(name, knownPeers: store).resolvingNickname(in: store)
      #expect(plain == .name(name, known: nil))
    }
  }
}
