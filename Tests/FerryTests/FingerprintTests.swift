import Ferry
import Testing

@Suite("Fingerprint")
struct FingerprintTests {
  let bytes: [UInt8] = (0..<32).map { UInt8($0 * 7 & 0xFF) }

  @Test("formats as upper-case hex in groups of four, with a short form")
  func formatting() throws {
    let fingerprint = try Fingerprint(bytes: bytes)
    #expect(fingerprint.hexString.count == 64)
    #expect(fingerprint.hexString == fingerprint.hexString.uppercased())
    #expect(fingerprint.description.split(separator: " ").count == 16)
    #expect(fingerprint.description.split(separator: " ").allSatisfy { $0.count == 4 })
    #expect(fingerprint.description.hasPrefix("0007 0E15"))
    #expect(fingerprint.shortDescription == "0007 0E15 1C23 2A31")
  }

  @Test("parses its own forms and OpenSSL's colon form, in any case")
  func parsing() throws {
    let fingerprint = try Fingerprint(bytes: bytes)
    #expect(try Fingerprint(parsing: fingerprint.hexString) == fingerprint)
    #expect(try Fingerprint(parsing: fingerprint.description) == fingerprint)
    #expect(try Fingerprint(parsing: fingerprint.hexString.lowercased()) == fingerprint)
    let colons = stride(from: 0, to: 64, by: 2).map { index -> String in
      let start = fingerprint.hexString.index(fingerprint.hexString.startIndex, offsetBy: index)
      return String(fingerprint.hexString[start..<fingerprint.hexString.index(start, offsetBy: 2)])
    }.joined(separator: ":")
    #expect(try Fingerprint(parsing: colons) == fingerprint)
  }

  @Test("rejects wrong lengths and non-hex text")
  func rejects() {
    #expect(throws: FingerprintError.wrongLength(31)) {
      try Fingerprint(bytes: Array(bytes.prefix(31)))
    }
    #expect(throws: FingerprintError.wrongLength(2)) { try Fingerprint(parsing: "ABCD") }
    #expect(throws: FingerprintError.notHexadecimal("XYZ")) { try Fingerprint(parsing: "XYZ") }
  }

  @Test("prefix matching ignores case and grouping")
  func prefixes() throws {
    let fingerprint = try Fingerprint(bytes: bytes)
    #expect(fingerprint.hasPrefix("0007"))
    #expect(fingerprint.hasPrefix("0007 0e15 1c"))
    #expect(fingerprint.hasPrefix(fingerprint.description))
    #expect(!fingerprint.hasPrefix("0008"))
    #expect(!fingerprint.hasPrefix(""))
    #expect(!fingerprint.hasPrefix("not hex"))
    #expect(Fingerprint.prefixLength(of: "9F2C 41ab") == 8)
    #expect(Fingerprint.prefixLength(of: "9f:2c") == 4)
    #expect(Fingerprint.prefixLength(of: fingerprint.description) == 64)
    #expect(Fingerprint.prefixLength(of: fingerprint.hexString + "0") == nil)
    #expect(Fingerprint.prefixLength(of: "desk") == nil)
  }
}
