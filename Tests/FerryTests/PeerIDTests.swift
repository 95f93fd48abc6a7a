import Ferry
import Testing

@Suite("PeerID")
struct PeerIDTests {
  let fingerprint = try! Fingerprint(bytes: Array(repeating: 0xAB, count: 32))

  @Test(
    "display names of 1 to 63 UTF-8 bytes are accepted",
    arguments: ["a", "Kitchen laptop", "Zoë's phone", "日本語のノート", String(repeating: "x", count: 63)])
  func valid(name: String) throws {
    let peer = try PeerID(displayName: name, fingerprint: fingerprint)
    #expect(peer.displayName == name)
    #expect(peer.description == "\(name) [ABAB ABAB ABAB ABAB]")
  }

  @Test("empty, over-long and control-character names are typed errors")
  func invalid() {
    #expect(throws: PeerIDError.emptyDisplayName) {
      try PeerID(displayName: "", fingerprint: fingerprint)
    }
    let long = String(repeating: "x", count: 64)
    #expect(throws: PeerIDError.displayNameTooLong(long, byteCount: 64)) {
      try PeerID(displayName: long, fingerprint: fingerprint)
    }
    // 22 three-byte characters: 22 characters but 66 bytes.
    let wide = String(repeating: "語", count: 22)
    #expect(throws: PeerIDError.displayNameTooLong(wide, byteCount: 66)) {
      try PeerID(displayName: wide, fingerprint: fingerprint)
    }
    #expect(throws: PeerIDError.controlCharacterInDisplayName("a\\u{A}b")) {
      try PeerID(displayName: "a\nb", fingerprint: fingerprint)
    }
  }

  @Test("peers are equal, and hash alike, exactly when their fingerprints are: names aside")
  func equality() throws {
    let other = try Fingerprint(bytes: Array(repeating: 0xCD, count: 32))
    let alice = try PeerID(displayName: "alice", fingerprint: fingerprint)
    // Avahi renamed a clash: the discovered "alice #2" is the connected "alice".
    let renamed = try PeerID(displayName: "alice #2", fingerprint: fingerprint)
    #expect(alice == renamed)
    #expect(alice.hashValue == renamed.hashValue)
    #expect(Set([alice, renamed]).count == 1)
    #expect(alice != (try PeerID(displayName: "alice", fingerprint: other)))
    #expect(alice.displayName != renamed.displayName)
  }
}
