import Ferry
import Foundation
import Testing

@testable import FerryCLI

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

  @Test("a prompt with empty folders lists where they go, and counts hidden ones")
  func promptListsFolders() {
    var builder = OfferSummary.Builder()
    builder.add("a.txt", size: 3)
    builder.add(".config/autostart", size: 0, isFolder: true)
    let summary = builder.summary
    let lines = InvitationPrompt.listing(
      count: summary.files, bytes: summary.bytes, names: summary.names, roots: summary.roots,
      hidden: summary.hidden, folders: summary.folders ?? 0)
    #expect(lines.contains { $0.contains("1 empty folder") }, "\(lines)")
    #expect(lines.contains { $0.contains("top-level entries: a.txt, .config") }, "\(lines)")
    #expect(lines.contains { $0.contains("including 1 hidden file or folder") }, "\(lines)")
  }
}
