import Ferry
import Foundation
import Synchronization

/// Progress bars on stderr: for one transfer, the current file and the total (rate, ETA); for
/// several (one `send` to several receivers, or a receiver with several senders), one total line
/// each, labelled. Redrawn in place at most ~10 times a second; nothing at all when disabled
/// (stderr is not a terminal, or `--json`).
final class ProgressBar: Sendable {
  private let enabled: Bool
  private let state = Mutex(State())

  private struct State {
    var rows: [(label: String, snapshot: ProgressSnapshot)] = []
    var linesDrawn = 0
    var lastDraw = ContinuousClock.now - .seconds(1)
  }

  init(enabled: Bool) {
    self.enabled = enabled
  }

  /// Updates the row `label` (added on first use) and redraws if ~100 ms have passed or `force`.
  func update(_ label: String, _ snapshot: ProgressSnapshot, force: Bool = false) {
    guard enabled else { return }
    let text = state.withLock { state -> String? in
      if let index = state.rows.firstIndex(where: { $0.label == label }) {
        state.rows[index].snapshot = snapshot
      } else {
        state.rows.append((label, snapshot))
      }
      let now = ContinuousClock.now
      let final = snapshot.bytes >= snapshot.total && snapshot.filesDone == snapshot.fileCount
      guard force || final || now - state.lastDraw >= .milliseconds(100) else { return nil }
      state.lastDraw = now
      return render(&state)
    }
    if let text { StandardStream.error.write(text) }
  }

  /// Runs `write` (which prints lines of its own) with the bars erased first and drawn again
  /// below its lines afterwards, so that messages and bars do not garble each other.
  func above(_ write: () -> Void) {
    guard enabled else { return write() }
    state.withLock { state in
      if state.linesDrawn > 0 {
        StandardStream.error.write(Self.toFirstLine(state.linesDrawn) + "\u{1B}[J")
        state.linesDrawn = 0
      }
      write()
      if !state.rows.isEmpty { StandardStream.error.write(render(&state)) }
    }
  }

  /// Removes the row `label` (its transfer ended) from later drawings.
  func remove(_ label: String) {
    guard enabled else { return }
    state.withLock { state in state.rows.removeAll { $0.label == label } }
  }

  /// Ends the display (the last drawing stays on screen); later updates start a new one.
  func finish() {
    guard enabled else { return }
    let drawn = state.withLock { state in
      defer {
        state.rows = []
        state.linesDrawn = 0
      }
      return state.linesDrawn > 0
    }
    if drawn { StandardStream.error.write("\n") }
  }

  private func render(_ state: inout State) -> String {
    var lines: [String] = []
    if state.rows.count == 1, let row = state.rows.first {
      let snapshot = row.snapshot
      if snapshot.fileCount > 1, let file = snapshot.currentFile {
        lines.append(
          Self.bar(
            done: snapshot.currentFileBytes, total: snapshot.currentFileSize,
            label: Self.shortened(printable(file), to: 32), width: 16))
      }
      lines.append(Self.totalLine(snapshot, label: row.label))
    } else {
      lines = state.rows.map { Self.totalLine($0.snapshot, label: $0.label) }
    }
    // Back to the first line of the previous drawing, then overwrite each line. A line wider
    // than the terminal would wrap, and the next redraw would climb too few lines: cut it.
    let columns = Self.terminalColumns()
    let text =
      Self.toFirstLine(state.linesDrawn)
      + lines.map { Self.fitted($0, to: columns) + "\u{1B}[K" }.joined(separator: "\n")
    state.linesDrawn = lines.count
    return text
  }

  /// Moves the cursor to the start of the first of the `lines` last drawn.
  private static func toFirstLine(_ lines: Int) -> String {
    lines > 1 ? "\r\u{1B}[\(lines - 1)A" : "\r"
  }

  private static func totalLine(_ snapshot: ProgressSnapshot, label: String) -> String {
    var line = bar(
      done: snapshot.bytes, total: snapshot.total, label: shortened(printable(label), to: 20),
      width: 24)
    let rate = snapshot.bytesPerSecond
    if rate > 0 { line += "  \(formatBytes(UInt64(wholeNumber(rate))))/s" }
    if rate > 0, snapshot.total > snapshot.bytes {
      // A trickle (a slow or hostile peer) gives an ETA beyond any clock: shown as such.
      let eta = wholeNumber(Double(snapshot.total - snapshot.bytes) / rate)
      line +=
        eta >= 100 * 3600
        ? "  ETA >99h" : "  ETA \(eta / 60):" + String(format: "%02d", eta % 60)
    }
    if snapshot.fileCount > 1 { line += "  file \(snapshot.filesDone)/\(snapshot.fileCount)" }
    return line
  }

  private static func bar(done: Int64, total: Int64, label: String, width: Int) -> String {
    let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
    let filled = Int(fraction * Double(width))
    return (label.isEmpty ? "" : label + " ") + "["
      + String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
      + "] " + String(format: "%3d%%", Int(fraction * 100))
      + "  \(formatBytes(UInt64(max(0, done))))/\(formatBytes(UInt64(max(0, total))))"
  }

  /// The width of the terminal on stderr (80 when it cannot be told), read at each drawing so
  /// that a resized window is followed.
  private static func terminalColumns() -> Int {
    var size = winsize()
    guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
    return Int(size.ws_col)
  }

  /// `line` cut to leave the last column free (a character in the last column makes some
  /// terminals wrap), counting one column per character.
  private static func fitted(_ line: String, to columns: Int) -> String {
    line.count < columns ? line : String(line.prefix(max(1, columns - 1)))
  }

  private static func shortened(_ text: String, to length: Int) -> String {
    text.count <= length ? text : "…" + text.suffix(length - 1)
  }
}
