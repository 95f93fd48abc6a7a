import Testing

@testable import FerryCLI

/// The lines a transfer ends with: what moved, in how long, how fast.
@Suite("Transfer summaries")
struct TransferSummaryTests {
  @Test("durations read as a stopwatch: tenths under 10 s, then seconds, m:ss, h:mm:ss")
  func durations() {
    #expect(TransferSummary.duration(.milliseconds(420)) == "0.4 s")
    #expect(TransferSummary.duration(.seconds(12)) == "12 s")
    #expect(TransferSummary.duration(.seconds(245)) == "4:05")
    #expect(TransferSummary.duration(.seconds(3729)) == "1:02:09")
    #expect(TransferSummary.duration(.seconds(-1)) == "0.0 s")
  }

  @Test("empty folders are counted apart, as the prompt counts them")
  func folders() {
    #expect(TransferSummary.items(8, folders: 0) == "8 files")
    #expect(TransferSummary.items(8, folders: 2) == "6 files and 2 empty folders")
    #expect(TransferSummary.items(1, folders: 1) == "1 empty folder")
    let line = TransferSummary.sent(
      files: 8, folders: 2, stored: 8, identical: 0, total: 6_000, sent: 6_000, to: "desk",
      took: .seconds(1))
    #expect(line.hasPrefix("Sent 6 files and 2 empty folders, 6.0 KB to desk in 1.0 s"), "\(line)")
  }

  @Test("a whole send: files, size, time and rate")
  func whole() {
    let line = TransferSummary.sent(
      files: 8, stored: 8, identical: 0, total: 1_200_000_000, sent: 1_200_000_000,
      to: "desk", took: .seconds(4))
    #expect(line == "Sent 8 files, 1.2 GB to desk in 4.0 s (300 MB/s).")
  }

  @Test("a no-op re-send says nothing was sent, not '0 bytes sent'")
  func nothing() {
    let line = TransferSummary.sent(
      files: 8, stored: 0, identical: 8, total: 5_000, sent: 0, to: "desk",
      took: .milliseconds(80))
    #expect(line == "Nothing to send: 8 already there on desk (identical, not sent).")
  }

  @Test("a LocalSend receiver that asked for some or none: what crossed, and how many it left")
  func leftOut() {
    let none = TransferSummary.sent(
      files: 3, stored: 0, identical: 0, leftOut: 3, total: 5_000, sent: 0, to: "phone",
      took: .milliseconds(80))
    #expect(
      none
        == "Nothing sent: phone did not ask for any of 3 files (it has them already, or left them out)."
    )
    let one = TransferSummary.sent(
      files: 1, stored: 0, identical: 0, leftOut: 1, total: 5, sent: 0, to: "phone",
      took: .milliseconds(80))
    #expect(
      one == "Nothing sent: phone did not ask for the file (it has it already, or left it out).")
    let some = TransferSummary.sent(
      files: 4, stored: 1, identical: 0, leftOut: 3, total: 5_500, sent: 500, to: "phone",
      took: .seconds(1))
    #expect(
      some
        == "Sent 1 of 4 files, 500 bytes to phone in 1.0 s (500 bytes/s); phone did not ask for 3 files "
        + "(it has them already, or left them out).", "\(some)")
  }

  @Test("some already there: what crossed, and how many were there; a resume says what crossed now")
  func partly() {
    let some = TransferSummary.sent(
      files: 8, stored: 2, identical: 6, total: 9_000_000, sent: 2_000_000, to: "desk",
      took: .seconds(1))
    #expect(
      some
        == "Sent 2 of 8 files, 2.0 MB to desk in 1.0 s (2.0 MB/s); 6 already there (identical, not sent)."
    )
    let resumed = TransferSummary.sent(
      files: 1, stored: 1, identical: 0, total: 1_000_000_000, sent: 400_000_000, to: "desk",
      took: .seconds(2))
    #expect(
      resumed == "Sent 1 file, 1.0 GB to desk in 2.0 s (200 MB/s); resumed, 400 MB of it sent now.")
  }

  @Test(
    "a rate beyond any link (a hostile sender's claimed sizes, a clock that barely moved) is not shown, and never traps"
  )
  func absurdRates() {
    #expect(TransferSummary.timing(1 << 62, took: .milliseconds(1)) == " in 0.0 s")
    #expect(TransferSummary.timing(UInt64.max, took: .milliseconds(2)) == " in 0.0 s")
    #expect(TransferSummary.timing(1 << 62, took: .zero) == " in 0.0 s")
    #expect(TransferSummary.timing(0, took: .seconds(3)) == " in 3.0 s")
    #expect(TransferSummary.timing(3_000_000, took: .seconds(3)) == " in 3.0 s (1.0 MB/s)")
  }
}
