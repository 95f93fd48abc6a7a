import Ferry
import Testing

@Suite("DiscoveryInfo: TXT records")
struct DiscoveryInfoTests {
  let fingerprint = try! Fingerprint(bytes: (0..<32).map { UInt8($0) })

  func strings(_ entries: [[UInt8]]) -> [String] {
    entries.map { String(decoding: $0, as: UTF8.self) }
  }

  @Test("encodes v, fp, then the app's pairs sorted by key")
  func encoding() throws {
    let info = try DiscoveryInfo(fingerprint: fingerprint, values: ["zeta": "1", "alpha": "2"])
    #expect(
      strings(info.encodedEntries) == [
        "v=\(FerryProtocol.version)", "fp=\(fingerprint.hexString)", "alpha=2", "zeta=1",
      ])
  }

  @Test("round-trips values with '=', non-ASCII text and empty values")
  func roundTrip() throws {
    let values = [
      "query": "a=b=c", "name": "Zoë — 日本", "empty": "", "spaces": " padded ",
    ]
    let info = try DiscoveryInfo(fingerprint: fingerprint, values: values)
    let decoded = DiscoveryInfo(decoding: info.encodedEntries)
    #expect(decoded == info)
    #expect(decoded.values["query"] == "a=b=c")
    #expect(decoded.protocolVersion == FerryProtocol.version)
    #expect(decoded.fingerprint == fingerprint)
  }

  @Test("decoding is lenient: bad entries are skipped, the first of duplicate keys wins")
  func lenientDecoding() {
    let entries: [[UInt8]] = [
      Array("=novalue".utf8), Array("v=abc".utf8), Array("fp=nothex".utf8), Array("flag".utf8),
      Array("Key=first".utf8), Array("key=second".utf8), [0x62, 0x3D, 0xFF, 0xFE],
    ]
    let info = DiscoveryInfo(decoding: entries)
    #expect(info.protocolVersion == nil)
    #expect(info.fingerprint == nil)
    #expect(info.values["flag"] == "")
    #expect(info.values["Key"] == "first")
    #expect(info.values["key"] == nil)
    #expect(info.values["b"] == "\u{FFFD}\u{FFFD}")
  }

  @Test(
    "each TXT rule has its own error",
    arguments: [
      (["": "x"], TXTRecordError.emptyKey),
      (["a=b": "x"], .keyContainsEquals("a=b")),
      (["naïve": "x"], .keyNotPrintableASCII("na\\u{EF}ve")),
      (["new\nline": "x"], .keyNotPrintableASCII("new\\u{A}line")),
      (["v": "2"], .reservedKey("v")),
      (["FP": "x"], .reservedKey("FP")),
      (["Key": "1", "key": "2"], .duplicateKey("key")),
      (["k": String(repeating: "x", count: 254)], .entryTooLong(key: "k", byteCount: 256)),
    ])
  func invalid(values: [String: String], expected: TXTRecordError) {
    #expect(throws: expected) { try DiscoveryInfo(fingerprint: fingerprint, values: values) }
  }

  @Test("an entry of exactly 255 bytes is allowed; the whole record is capped")
  func sizes() throws {
    _ = try DiscoveryInfo(
      fingerprint: fingerprint, values: ["k": String(repeating: "x", count: 253)])
    var many: [String: String] = [:]
    for index in 0..<6 {
      many["k\(index)"] = String(repeating: "x", count: 240)
    }
    #expect(throws: TXTRecordError.self) {
      try DiscoveryInfo(fingerprint: fingerprint, values: many)
    }
    do {
      _ = try DiscoveryInfo(fingerprint: fingerprint, values: many)
    } catch {
      guard case .recordTooLong(let count) = error else {
        Issue.record("expected recordTooLong, got \(error)")
        return
      }
      #expect(count > DiscoveryInfo.maximumRecordBytes)
      #expect(error.description.contains("1300"))
    }
  }
}
