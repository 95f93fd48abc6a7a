import Foundation
import Testing

@testable import FerryDaemon

/// The page's file picker: a folder of the home, never one outside it, names as bytes.
@Suite("Listing the user's home")
struct HomeListingTests {
  /// A home with a folder, files, a hidden file, a name that is not UTF-8 and a link out; a
  /// folder beside it whose name starts with the home's.
  static func home() throws -> String {
    let base = FileManager.default.temporaryDirectory
      .appendingPathComponent("ferry-home-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(
      atPath: base + "/Pictures/album", withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: base + "/b.txt", contents: Data(count: 3))
    _ = FileManager.default.createFile(atPath: base + "/.hidden", contents: Data())
    _ = FileManager.default.createFile(atPath: base + "/A.txt", contents: Data())
    // A name with a control character: UTF-8, listed (the page escapes it when it shows it).
    _ = FileManager.default.createFile(atPath: base + "/caf\u{1}", contents: Data())
    // A name that is not UTF-8 (0xE9 alone), made with the raw bytes.
    var raw = Array((base + "/caf").utf8)
    raw.append(0xE9)
    raw.append(0)
    let made = raw.withUnsafeBufferPointer { pointer in
      pointer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: raw.count) {
        open($0, O_CREAT | O_WRONLY, 0o600)
      }
    }
    if made >= 0 { close(made) }
    try FileManager.default.createSymbolicLink(atPath: base + "/out", withDestinationPath: "/etc")
    try FileManager.default.createDirectory(atPath: base + "x", withIntermediateDirectories: true)
    return base
  }

  @Test("the home by default: folders first, then by name as bytes; hidden and non-UTF-8 left out")
  func listing() throws {
    let home = try Self.home()
    defer {
      try? FileManager.default.removeItem(atPath: home)
      try? FileManager.default.removeItem(atPath: home + "x")
    }
    let listing = HomeListing(home: home)
    let found = try listing.list(nil, hidden: false)
    #expect(found.entries.map(\.name) == ["Pictures", "A.txt", "b.txt", "caf\u{1}", "out"])
    #expect(found.entries.first { $0.name == "b.txt" }?.size == 3)
    #expect(found.entries.first { $0.name == "out" }?.kind == .other)
    #expect(try listing.list(nil, hidden: true).entries.contains { $0.name == ".hidden" })
    #expect(try listing.list(home + "/Pictures", hidden: false).entries.map(\.name) == ["album"])
  }

  @Test("outside the home, through a link, with . or .., relative or missing: refused")
  func refusals() throws {
    let home = try Self.home()
    defer {
      try? FileManager.default.removeItem(atPath: home)
      try? FileManager.default.removeItem(atPath: home + "x")
    }
    let listing = HomeListing(home: home)
    #expect(throws: HomeListing.Refusal.outside) { try listing.list("/etc", hidden: false) }
    #expect(throws: HomeListing.Refusal.outside) { try listing.list(home + "/out", hidden: false) }
    #expect(throws: HomeListing.Refusal.outside) { try listing.list(home + "x", hidden: false) }
    for bad in [home + "/Pictures/..", home + "/./Pictures", "Pictures", "", home + "/\u{0}"] {
      #expect(throws: HomeListing.Refusal.malformed, "\(bad)") {
        try listing.list(bad, hidden: false)
      }
    }
    #expect(throws: (any Error).self) { try listing.list(home + "/nothing", hidden: false) }
    #expect(throws: (any Error).self) { try listing.list(home + "/b.txt", hidden: false) }
  }
}
