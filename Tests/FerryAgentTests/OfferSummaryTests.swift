import Ferry
import Foundation
import Testing

@testable import FerryAgent

/// What `ferry send` announces and what `ferry receive` then admits without asking again, with
/// empty folders counted apart from files.
@Suite("Offer summaries and empty folders")
struct OfferSummaryTests {
  /// A batch of two files and two empty folders, one of them hidden.
  func summary() -> OfferSummary {
    var builder = OfferSummary.Builder()
    builder.add("photos/a.jpg", size: 10)
    builder.add("photos/empty", size: 0, isFolder: true)
    builder.add("photos/b.jpg", size: 20)
    builder.add("logs/.cache", size: 0, isFolder: true)
    return builder.summary
  }

  @Test(
    "folders are counted apart from files and names; their roots are listed, hidden ones counted")
  func builder() {
    let summary = summary()
    #expect(summary.files == 2)
    #expect(summary.folders == 2)
    #expect(summary.entries == 4)
    #expect(summary.bytes == 30)
    #expect(summary.names == ["photos/a.jpg", "photos/b.jpg"])
    #expect(summary.roots == ["photos", "logs"])
    #expect(summary.hidden == 1)  // logs/.cache
    // Decoded as sent; a summary without folders (an older sender's) has none.
    #expect(OfferSummary.decode(summary.encoded) == summary)
    var plain = OfferSummary.Builder()
    plain.add("x", size: 1)
    #expect(plain.summary.folders == nil)
    #expect(!String(decoding: plain.summary.encoded, as: UTF8.self).contains("folders"))
  }

  @Test("a negative or huge folder count is no summary")
  func implausible() {
    var summary = summary()
    for count in [-1, Int(Int32.max) + 1] {
      summary.folders = count
      #expect(OfferSummary.decode(summary.encoded) == nil, "\(count)")
    }
  }

  @Test("the announced files and folders are admitted; an unannounced folder is not")
  func admits() throws {
    let summary = summary()
    let entries: [(path: String, size: UInt64)] = [
      ("photos/a.jpg", 10), ("photos/empty", 0), ("photos/b.jpg", 20), ("logs/.cache", 0),
    ]
    let tally = try #require(
      summary.admits(entries, folders: ["photos/empty", "logs/.cache"]))
    #expect(tally.files == 2 && tally.folders == 2 && tally.bytes == 30)
    // One more empty folder than announced, even within a listed top-level entry.
    #expect(
      summary.admits(
        entries + [("photos/more", 0)], folders: ["photos/empty", "logs/.cache", "photos/more"])
        == nil)
    // A folder offered where a file was announced is no file of the batch.
    #expect(
      summary.admits(entries, folders: ["photos/empty", "logs/.cache", "photos/b.jpg"]) == nil)
    // A receiver older than version 3 is sent the files alone: they are what was announced.
    let filesOnly = try #require(summary.admits([("photos/a.jpg", 10), ("photos/b.jpg", 20)]))
    #expect(filesOnly.files == 2 && filesOnly.folders == 0)
  }

  @Test(
    "the names shown are the batch's first files even when a part before them holds only folders")
  func namesAcrossParts() throws {
    var builder = OfferSummary.Builder()
    builder.add("tree/a", size: 0, isFolder: true)
    builder.add("tree/b", size: 0, isFolder: true)
    builder.add("tree/x.txt", size: 1)
    builder.add("tree/y.txt", size: 1)
    let summary = builder.summary
    let first = try #require(
      summary.admits([("tree/a", 0), ("tree/b", 0)], folders: ["tree/a", "tree/b"]))
    let second = try #require(summary.admits([("tree/x.txt", 1)], after: first))
    #expect(summary.admits([("tree/y.txt", 1)], after: second) != nil)
    // Another file where the second name was shown is not the batch.
    #expect(summary.admits([("tree/z.txt", 1)], after: second) == nil)
    #expect(summary.admits([("tree/y.txt", 1), ("tree/x.txt", 1)], after: first) == nil)
  }

  @Test(
    "standard input streamed: announced as of unknown size; a yes to known sizes never admits a stream"
  )
  func streamed() throws {
    var builder = OfferSummary.Builder()
    builder.add("notes.txt", size: 10)
    builder.add("dump.sql", size: 0, isStreamed: true)
    let summary = builder.summary
    #expect(summary.files == 2 && summary.streamed == 1 && summary.bytes == 10)
    let decoded = try #require(OfferSummary.decode(summary.encoded))
    #expect(decoded == summary)
    let entries: [(path: String, size: UInt64)] = [("notes.txt", 10), ("dump.sql", 0)]
    #expect(summary.admits(entries, streamed: ["dump.sql"]) != nil)
    // Announced with a known size, offered as a stream: not what was said yes to.
    var known = OfferSummary.Builder()
    known.add("notes.txt", size: 10)
    known.add("dump.sql", size: 0)
    #expect(known.summary.admits(entries, streamed: ["dump.sql"]) == nil)
    // A stream spent is spent: a second one in a later part is not admitted.
    let first = try #require(summary.admits([("notes.txt", 10)], streamed: []))
    let second = try #require(
      summary.admits([("dump.sql", 0)], streamed: ["dump.sql"], after: first))
    #expect(summary.admits([("dump.sql", 0)], streamed: ["dump.sql"], after: second) == nil)
    // A count beyond the files is no summary.
    var text = String(decoding: summary.encoded, as: UTF8.self)
    text = text.replacingOccurrences(of: "\"streamed\":1", with: "\"streamed\":3")
    #expect(OfferSummary.decode(Array(text.utf8)) == nil)
  }
}
