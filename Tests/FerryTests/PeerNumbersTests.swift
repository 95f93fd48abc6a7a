import FerryWire
import Foundation
import Testing

@testable import Ferry

/// Every number a peer sends is range-checked where it is decoded: sizes, their sums, times;
/// and text from peers reaches a terminal only escaped.
@Suite("Numbers and text from peers")
struct PeerNumbersTests {
  func offer(_ files: [(size: UInt64, seconds: Int64)]) -> Frame {
    ResourceMessage.offer(
      channel: 1,
      files: files.enumerated().map { index, file in
        OfferedFile(
          path: "f\(index)", size: file.size, modificationSeconds: file.seconds,
          modificationNanoseconds: 0, mode: 0o644)
      }
    ).frame
  }

  @Test("sizes up to 2^62 and totals up to 2^62 decode; anything larger is a protocol error")
  func sizes() throws {
    _ = try ResourceMessage(frame: offer([(1 << 62, 0)]))
    _ = try ResourceMessage(frame: offer([(1 << 61, 0), (1 << 61, 0)]))
    let tooLarge: [[(size: UInt64, seconds: Int64)]] = [
      [((1 << 62) + 1, 0)], [(1 << 63, 0)], [(UInt64.max, 0)],
      [(1 << 62, 0), (1, 0)], [(UInt64.max / 2, 0), (UInt64.max / 2 + 2, 0)],
    ]
    for files in tooLarge {
      #expect(throws: WireError.self) { try ResourceMessage(frame: offer(files)) }
    }
  }

  @Test("modification times beyond ±2^38 seconds are a protocol error")
  func times() throws {
    _ = try ResourceMessage(frame: offer([(1, -(1 << 38))]))
    _ = try ResourceMessage(frame: offer([(1, 1 << 38)]))
    let outside: [Int64] = [.min, .max, (1 << 38) + 1, -(1 << 38) - 1]
    for seconds in outside {
      #expect(throws: WireError.self) { try ResourceMessage(frame: offer([(1, seconds)])) }
    }
  }

  @Test("an offer count larger than the payload can hold does not make the decoder allocate it")
  func hugeCount() {
    var payload: [UInt8] = []
    payload.appendBigEndian(UInt32(ResourceMessage.maximumFiles))
    #expect(throws: WireError.truncated(.offer)) {
      try ResourceMessage(frame: Frame(type: .offer, channel: 1, payload: payload))
    }
  }

  @Test(
    "escaping: control, format, bidi and separator characters become visible; quotes close nothing",
    arguments: [
      ("plain name", "plain name"),
      ("\u{1B}]0;title\u{7}", "\\u{1B}]0;title\\u{7}"),
      ("\u{1B}[1A\u{1B}[2K", "\\u{1B}[1A\\u{1B}[2K"),
      ("Alice\u{202E}txt.exe", "Alice\\u{202E}txt.exe"),
      ("a\u{2028}b\u{2029}c", "a\\u{2028}b\\u{2029}c"),
      ("Ali\u{200B}ce", "Ali\\u{200B}ce"),
      ("no\u{A0}break", "no\\u{A0}break"),
      ("\u{301}mark first", "\\u{301}mark first"),
      ("café", "café"),
      ("say \"hi\" \\", "say \\\"hi\\\" \\\\"),
    ])
  func escaping(text: String, shown: String) {
    #expect(DisplayText.escaping(text) == shown)
  }

  @Test("long text is cut; terminal-safe text keeps its line breaks only")
  func cut() {
    #expect(DisplayText.escaping(String(repeating: "x", count: 500)).count == 201)
    #expect(DisplayText.terminalSafe("one\ntwo\u{1B}[2J") == "one\ntwo\\u{1B}[2J")
  }

  @Test("names that differ only by invisible characters, spacing, case or width look alike")
  func skeletons() {
    let alice = DisplayText.skeleton("Alice")
    for lookalike in [
      "Alice\u{200B}", "A\u{200D}lice", "alice", "Ａｌｉｃｅ", " Alice ", "Alice\u{FE0F}",
    ] {
      #expect(DisplayText.skeleton(lookalike) == alice, "\(lookalike.debugDescription)")
    }
    #expect(DisplayText.skeleton("Alicia") != alice)
    #expect(DisplayText.skeleton("Bob laptop") == DisplayText.skeleton("Bob  laptop"))
  }

  @Test("a name made to look like a known one is flagged, never taken for it")
  func similarName() throws {
    let home = URL(fileURLWithPath: NSTemporaryDirectory() + "ferry-peers-\(UUID().uuidString)")
    let store = KnownPeers(directory: home)
    let alice = try PeerID(displayName: "Alice", fingerprint: Identity.generate().fingerprint)
    try store.recordSeen(alice)
    try store.trust(alice.fingerprint)
    let impostor = try PeerID(
      displayName: "Alice\u{200B}", fingerprint: Identity.generate().fingerprint)
    #expect(
      try store.status(of: impostor)
        == .similarName(known: "Alice", previous: alice.fingerprint))
    #expect(try store.status(of: alice) == .known(trusted: true))
    // Recorded as a peer of its own: names that differ are different names.
    try store.recordSeen(impostor)
    #expect(try store.all().count == 2)
    #expect(impostor.description.hasPrefix("Alice\\u{200B} ["))
  }
}
