import Testing

@testable import FerryCLI

/// A peer's text on the receiver's terminal: every line the terminal starts is marked as the
/// peer's, whatever line ends the text uses.
@Suite("A received text's lines")
struct MarkedLinesTests {
  /// The lines a terminal shows for `text`: split where it starts one (a newline byte).
  func terminalLines(_ text: String) -> [Substring] {
    ReceiveReporter.markedLines(text).split(separator: "\n", omittingEmptySubsequences: false)
      .dropLast()
  }

  @Test(
    "CR LF, LF, lone CR, NEL and the line separators never start an unmarked line",
    arguments: [
      "hello\r\nSaved invoice.pdf (trusted)", "a\nb", "a\rSaved x", "a\u{85}b", "a\u{2028}b",
      "a\u{2029}b", "\r\n\r\n", "x\u{1B}[2Ky\r\n\u{1B}[1A",
    ])
  func everyLineMarked(text: String) {
    let lines = terminalLines(text)
    #expect(!lines.isEmpty)
    for line in lines {
      #expect(line.hasPrefix("  | "), "\(line.debugDescription)")
      // Nothing left that moves the cursor or ends a line on a terminal.
      #expect(
        !line.utf8.contains { $0 < 0x20 || $0 == 0x7F }, "\(line.debugDescription)")
    }
  }

  @Test("as many lines as newline bytes plus one; CR LF is one line end, its CR shown")
  func counts() {
    #expect(terminalLines("one\r\ntwo\nthree").count == 3)
    #expect(terminalLines("one\r\ntwo\nthree")[0] == "  | one\\u{D}")
    #expect(terminalLines("").count == 1)
    #expect(terminalLines("a\n").count == 2)
  }
}
