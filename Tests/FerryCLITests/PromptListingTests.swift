import Ferry
import FerryAgent
import Testing

@testable import FerryCLI

/// What `ferry receive`'s prompt lists of what a sender announced.
@Suite("The prompt's listing")
struct PromptListingTests {
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

  @Test("the prompt says a streamed file's size is unknown")
  func streamedListing() {
    let alone = InvitationPrompt.listing(
      count: 1, bytes: 0, names: ["dump.sql"], roots: ["dump.sql"], hidden: 0, streamed: 1)
    #expect(alone.first == "1 file, size unknown (sent as it is read):")
    let mixed = InvitationPrompt.listing(
      count: 2, bytes: 2048, names: ["a", "b"], roots: ["a", "b"], hidden: 0, streamed: 1)
    #expect(mixed.first == "2 files, 2.0 KB and 1 of unknown size:")
  }
}
