import Ferry
import Foundation
import Testing

@testable import FerryMultipeer

/// Peers are their identity, and a local one survives archiving with its key.
struct MCPeerIDTests {
  @Test("equality and hashing follow the identity, not the name")
  func equality() throws {
    let me = MCPeerID(displayName: "alice")
    let other = MCPeerID(displayName: "alice")
    #expect(me != other)
    let renamed = MCPeerID(
      remote: try PeerID(displayName: "alice #2", fingerprint: me.ferryPeer.fingerprint))
    #expect(me == renamed)
    #expect(me.hash == renamed.hash)
    #expect(Set([me, renamed, other]).count == 2)
    #expect(me.copy() as? MCPeerID === me)
  }

  @Test("NSKeyedArchiver keeps a local peer: the same identity, able to make a session")
  func keyedArchive() throws {
    let me = MCPeerID(displayName: "kitchen")
    let data = try NSKeyedArchiver.archivedData(withRootObject: me, requiringSecureCoding: true)
    let restored = try #require(
      try NSKeyedUnarchiver.unarchivedObject(ofClass: MCPeerID.self, from: data))
    #expect(restored == me)
    #expect(restored.displayName == "kitchen")
    #expect(restored.identity?.fingerprint == me.identity?.fingerprint)
    let session = MCSession(peer: restored)
    #expect(session.ferrySession.identity.fingerprint == me.identity?.fingerprint)
  }

  @Test("Codable round trip; a tampered fingerprint or key is refused")
  func codable() throws {
    let me = MCPeerID(displayName: "desk")
    let data = try JSONEncoder().encode(me)
    let restored = try JSONDecoder().decode(MCPeerID.self, from: data)
    #expect(restored == me)
    #expect(restored.identity != nil)

    var fields = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
    fields["fingerprint"] = String(repeating: "ab", count: 32)
    let tampered = try JSONSerialization.data(withJSONObject: fields)
    #expect(throws: DecodingError.self) { try JSONDecoder().decode(MCPeerID.self, from: tampered) }

    var swapped = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
    swapped["privateKey"] = Identity.generate().privateKeyPEM
    let wrongKey = try JSONSerialization.data(withJSONObject: swapped)
    #expect(throws: DecodingError.self) { try JSONDecoder().decode(MCPeerID.self, from: wrongKey) }
  }

  @Test("display names: 63 UTF-8 bytes at most, no control characters")
  func names() {
    #expect(MCPeerID.isValid(displayName: String(repeating: "a", count: 63)))
    #expect(!MCPeerID.isValid(displayName: String(repeating: "é", count: 32)))
    #expect(!MCPeerID.isValid(displayName: ""))
    #expect(!MCPeerID.isValid(displayName: "bell\u{7}"))
    #expect(throws: MCError.self) {
      try MCPeerID(displayName: "", identity: Identity.generate())
    }
  }

  @Test("MCError: Apple's codes, domain and catch patterns")
  func errors() {
    let error = MCError(.notConnected, "bob is not connected")
    #expect((error as NSError).domain == MCErrorDomain)
    #expect((error as NSError).code == 1)
    do {
      throw error
    } catch MCError.notConnected {
      // Apple's pattern.
    } catch {
      Issue.record("not caught as notConnected: \(error)")
    }
    #expect(MCError.Code.timedOut.rawValue == 4 && MCError.Code.unavailable.rawValue == 6)
    #expect(MCSessionState.connected.rawValue == 2)
    #expect(kMCSessionMinimumNumberOfPeers == 2 && kMCSessionMaximumNumberOfPeers == 8)
  }
}
