import Ferry
import Testing

@testable import FerryMultipeer

/// Resource names: any MultipeerConnectivity name crosses as one safe path component.
struct ResourceNameTests {
  @Test(
    "hostile and ordinary names become one valid component and come back unchanged",
    arguments: [
      "photo.jpg", "a/b", "../../etc/passwd", ".hidden", ".ferry-partial", "100%", "%2F",
      "tab\there", "line\nbreak", "bidi\u{202E}txt", "zero\u{200B}width", "é/ü", "🦊", "/",
      "sep\u{2028}", "...", "../", "%00",
    ])
  func roundTrip(_ name: String) throws {
    let escaped = try #require(ResourceName.escape(name))
    let path = try RelativePath(validating: escaped)
    #expect(path.components.count == 1)
    #expect(!escaped.hasPrefix("."))
    #expect(ResourceName.unescape(escaped) == name)
  }

  @Test(
    "names that are empty, . or .. or hold NUL once decoded reach the delegate as they crossed",
    arguments: [
      // What a FerryMultipeer sender makes of `..`, `.` and a name with NUL.
      "%2E.", "%2E", "nul%00byte",
      // What a hostile or plain sender may send instead.
      "%2E%2E", "%2e%2e", ".%2E", "%00", "a%00", "%00%2E%2E",
    ])
  func undeliverable(_ component: String) {
    #expect(ResourceName.unescape(component) == component)
    #expect(ResourceName.isDeliverable(component))
  }

  @Test("the escaped forms of ., .. and NUL names are valid components that stay escaped")
  func escapedForms() throws {
    for name in ["..", ".", "nul\u{0}byte", "\u{0}"] {
      let escaped = try #require(ResourceName.escape(name))
      #expect(try RelativePath(validating: escaped).components.count == 1)
      #expect(ResourceName.unescape(escaped) == escaped)
    }
    #expect(ResourceName.escape("..") == "%2E.")
    #expect(ResourceName.escape(".") == "%2E")
  }

  @Test("whatever a component holds, the name delivered is never empty, . or .., nor holds NUL")
  func neverUndeliverable() {
    // Ferry checks each component as a path; these are not, and are delivered encoded anyway.
    for component in ["", ".", "..", "\u{0}", "a\u{0}b", "%", "%2", "%%2E%2E"] {
      let name = ResourceName.unescape(component)
      #expect(ResourceName.isDeliverable(name), "\(component.debugDescription) → \(name)")
    }
    #expect(!ResourceName.isDeliverable(""))
    #expect(!ResourceName.isDeliverable("."))
    #expect(!ResourceName.isDeliverable(".."))
    #expect(!ResourceName.isDeliverable("a\u{0}"))
    #expect(ResourceName.isDeliverable("..."))
    #expect(ResourceName.isDeliverable("../x"))
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
