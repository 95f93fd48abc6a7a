import Ferry
import FerryAgent
import Testing

@testable import FerryCLI

/// Progress lines at the widths people use: the numbers stay, the bar and the name give way.
@Suite("Progress lines fitted to the terminal")
struct BarLayoutTests {
  static func line(columns: Int, label: String = "Kitchen laptop, upstairs") -> String {
    BarLayout.line(
      label: label, done: 1_200_000, total: 3_000_000,
      extras: (rate: "  2.0 MB/s", eta: "  ETA 0:01", files: "  file 4/5"), columns: columns,
      bar: 24, name: 20)
  }

  @Test("80 columns: everything; 60: a shorter bar; 40: sizes and percentage still there")
  func widths() {
    let wide = Self.line(columns: 80)
    #expect(wide.contains("ETA 0:01") && wide.contains("2.0 MB/s") && wide.contains("file 4/5"))
    #expect(BarLayout.width(wide) <= 79)
    for columns in [60, 50, 40, 30] {
      let line = Self.line(columns: columns)
      #expect(BarLayout.width(line) <= columns - 1, "\(columns): \(line)")
      #expect(line.contains(" 40%") && line.contains("1.2 MB/3.0 MB"), "\(columns): \(line)")
    }
    let forty = Self.line(columns: 40)
    #expect(forty.contains("…"), "the name gave way: \(forty)")
    #expect(!forty.contains("ETA"), "the ETA went first: \(forty)")
    let sixty = Self.line(columns: 60)
    #expect(sixty.contains("file 4/5"), "\(sixty)")
  }

  @Test("wide characters count two columns, combining marks none")
  func displayWidth() {
    #expect(BarLayout.width("abc") == 3)
    #expect(BarLayout.width("台所のノート") == 12)
    #expect(BarLayout.width("e\u{301}") == 1)
    let line = Self.line(columns: 40, label: "台所のノートパソコン二階")
    #expect(BarLayout.width(line) <= 39, "\(line)")
    #expect(BarLayout.shortened("台所のノート", to: 7) == "…ノート")
  }

  @Test(
    "a transfer standing still shows for how long, not its last rate and an ETA it is not keeping")
  func stalled() {
    let snapshot = ProgressSnapshot(
      bytes: 1_200_000, total: 3_000_000, bytesPerSecond: 2_000_000, filesDone: 3, fileCount: 5)
    let moving = ProgressBar.totalLine(snapshot, label: "desk", still: .seconds(1), columns: 80)
    #expect(moving.contains("2.0 MB/s") && moving.contains("ETA 0:0"), "\(moving)")
    let still = ProgressBar.totalLine(snapshot, label: "desk", still: .seconds(75), columns: 80)
    #expect(still.contains("stalled 1:15"), "\(still)")
    #expect(!still.contains("/s") && !still.contains("ETA"), "\(still)")
    let finished = ProgressSnapshot(
      bytes: 3_000_000, total: 3_000_000, bytesPerSecond: 2_000_000, filesDone: 5, fileCount: 5)
    let done = ProgressBar.totalLine(finished, label: "desk", still: .seconds(75), columns: 80)
    #expect(!done.contains("stalled"), "\(done)")
  }

  @Test("an unknown total: an empty bar, no percentage, the bytes so far over '?'")
  func unknownTotal() {
    let line = BarLayout.line(
      label: "stdin", done: 3_000_000, total: 3_000_001, totalKnown: false,
      extras: (rate: "  1.0 MB/s", eta: nil, files: nil), columns: 80, bar: 10, name: 20)
    #expect(line == "stdin [          ]  ...  3.0 MB/?  1.0 MB/s", "\(line)")
  }
}
