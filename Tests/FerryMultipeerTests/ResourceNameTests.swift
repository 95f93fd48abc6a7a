import Ferry
import Testing

@testable import FerryMultipeer

/// Resource names: any MultipeerConnectivity name crosses as one safe path component.
struct ResourceNameTests {
  @Test(
    "hostile and ordinary names become one valid component and come back unchanged",
    arguments: [
      "photo.jpg", "a/b", "../../etc/passwd", "..", ".", ".hidden", ".ferry-partial", "100%",
      "%2F", "tab\there", "line\nbreak", "bidi\u{202E}txt", "zero\u{200B}width", "é/ü", "🦊",
      "nul\u{0}byte", "/", "sep\u{2028}",
    ])
  func roundTrip(_ name: String) throws {
    let escaped = try #require(ResourceName.escape(name))
    let path = try RelativePath(validating: escaped)
    #expect(path.components.count == 1)
    #expect(!escaped.hasPrefix("."))
    #expect(ResourceName.unescape(escaped) == name)
  }

  @Test("an empty name and one too long once encoded are refused")
  func refused() {
    #expect(ResourceName.escape("") == nil)
    #expect(ResourceName.escape(String(repeating: "a", count: 256)) == nil)
    #expect(ResourceName.escape(String(repeating: "/", count: 90)) == nil)  // 270 bytes encoded
    #expect(ResourceName.escape(String(repeating: "a", count: 255)) != nil)
  }

  @Test("names from plain Ferry senders pass through; broken escapes stay as they are")
  func plainNames() {
    #expect(ResourceName.unescape("report.pdf") == "report.pdf")
    #expect(ResourceName.unescape("50%") == "50%")
    #expect(ResourceName.unescape("%zz%4") == "%zz%4")
    #expect(ResourceName.unescape("%41") == "A")
  }
}
