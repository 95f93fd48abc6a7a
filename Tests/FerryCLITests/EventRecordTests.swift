import Ferry
import Testing

@testable import FerryCLI

/// Events as typed records: the fields in the order declared, snake_case names, null for what
/// is nil, the peer's own TXT keys untouched, and the names read from the type alone.
@Suite("NDJSON event records")
struct EventRecordTests {
  @Test("fields in order, named in snake_case, nil written as null")
  func encoding() {
    let done = SendDone(
      peer: "desk", files: 2, folders: 0, bytes: 10, stored: 2, identical: 0, bytesSent: 10,
      unreadable: 0)
    #expect(
      JSONValue.object(done.fields).serialized
        == #"{"peer":"desk","files":2,"folders":0,"bytes":10,"stored":2,"identical":0,"bytes_sent":10,"unreadable":0}"#
    )
    let failure = Failure(code: .noPeer, message: "gone", peer: "desk")
    #expect(
      JSONValue.object(failure.fields).serialized
        == #"{"code":"no-peer","exit":null,"message":"gone","peer":"desk","path":null}"#)
  }

  @Test(
    "a discovered peer: nested addresses, its TXT keys as they are; peer-lost flattens it and adds reason"
  )
  func discoveredPeer() throws {
    let info = try DiscoveryInfo(
      fingerprint: Identity.generate().fingerprint, values: ["camelKey": "v", "Zed": "1"])
    let peer = DiscoveredPeer(
      name: "desk", serviceType: .ferry, domain: "local", hostName: "desk.local", port: 4,
      addresses: [], info: info)
    let lost = JSONValue.object(PeerLost(peer, reason: "unreachable").fields).serialized
    #expect(lost.contains(#""protocol_version":5"#), "\(lost)")
    #expect(lost.contains(#""txt":{"Zed":"1","camelKey":"v"}"#), "\(lost)")
    #expect(lost.hasSuffix(#","reason":"unreachable"}"#), "\(lost)")
    #expect(PeerLost.fieldNames.last == "reason" && PeerLost.fieldNames.first == "name")
    #expect(Event.addressFields == ["ip", "family", "interface"])
  }

  @Test("a file-done record's spelled-out fields are the ones its properties encode to")
  func fileDoneSpelledOut() {
    let records = [
      FileDone(
        received: "a/b \u{7}.txt", from: "desk", status: "stored",
        digest: FileDigest(.sha256, [UInt8](repeating: 0xAB, count: 32)), saved: "/x/a/b"),
      FileDone(
        received: "é", from: "p", status: "skipped",
        digest: FileDigest(.xxh3, [UInt8](repeating: 1, count: 16)), saved: nil),
      FileDone(received: "z", from: "p", status: "skipped", digest: nil, saved: "-"),
    ]
    for record in records {
      let encoded = JSONValueEncoder.encode(record)
      #expect(JSONValue.object(record.fields) == encoded)
      #expect(record.fields.map(\.0) == FileDone.fieldNames)
    }
  }

  @Test("every record's names are read from its type, and every event has a record")
  func names() {
    #expect(
      FileDone.fieldNames == ["peer", "path", "status", "checksum", "digest", "sha256", "saved"])
    for event in Event.allCases {
      #expect(!event.fields.isEmpty, "\(event.rawValue) has no record")
    }
  }
}
