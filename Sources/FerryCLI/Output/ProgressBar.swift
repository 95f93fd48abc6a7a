import Ferry
import FerryAgent
import Foundation
import Synchronization

/// Progress bars on stderr: for one transfer, the current file and the total (rate, ETA); for
/// several (one `send` to several receivers, or a receiver with several senders), one total line
/// each, labelled. Redrawn in place at most ~10 times a second; nothing at all when disabled
/// (stderr is not a terminal, or `--json`).
///
/// A question being asked (``showPrompt(_:)``) is part of the drawing, below the bars, with a
/// line listing the questions waiting their turn and the time each has left: a redraw never
/// covers it. While it is up, a progress update redraws the bars only, and puts the cursor
/// back where the person is typing (save and restore cursor), so the typed answer stays.
final class ProgressBar: Sendable {
  private let enabled: Bool
  private let state = Mutex(State())

  private struct State {
    /// Each transfer's last snapshot, and when it came: a transfer that has not moved for
    /// ``stallShownAfter`` shows how long it has been still instead of its last rate.
    var rows: [(label: String, snapshot: ProgressSnapshot, at: ContinuousClock.Instant)] = []
    var linesDrawn = 0
    /// How many of the lines drawn are bars (the rest: the waiting line and the prompt).
    var barLinesDrawn = 0
    var lastDraw = ContinuousClock.now - .seconds(1)
    /// The question's last line (`Accept? [y/N] `), while one is asked.
    var prompt: String?
    /// Questions waiting their turn: who asks, and until when.
    var waiting:
      [(
        ticket: Int, label: String, deadline: ContinuousClock.Instant,
        isPending: @Sendable () -> Bool
      )] = []
    var nextTicket = 0
    /// ``stop()`` was called: nothing is drawn any more.
    var stopped = false
    /// The once-a-second redraw that shows a transfer standing still is running.
    var ticking = false
  }

  /// How long a transfer must not move for its bar to say so ("stalled 0:05") instead of
  /// showing its last rate and an ETA it is not keeping.
  static let stallShownAfter: Duration = .seconds(3)

  init(enabled: Bool) {
    self.enabled = enabled
  }

  /// Updates the row `label` (added on first use) and redraws if ~100 ms have passed or `force`.
  func update(_ label: String, _ snapshot: ProgressSnapshot, force: Bool = false) {
    guard enabled else { return }
    // Written under the lock: two transfers' drawings must not interleave with what each
    // believes is on screen.
    state.withLock { state in
      guard !state.stopped else { return }
      let now = ContinuousClock.now
      if let index = state.rows.firstIndex(where: { $0.label == label }) {
        state.rows[index].snapshot = snapshot
        state.rows[index].at = now
      } else {
        state.rows.append((label, snapshot, now))
      }
      startTicking(&state)
      let final = Self.isComplete(snapshot)
      guard force || final || now - state.lastDraw >= .milliseconds(100) else { return }
      state.lastDraw = now
      if state.prompt != nil, let bars = redrawBarsOnly(&state) {
        StandardStream.error.write(bars)
      } else {
        StandardStream.error.write(render(&state))
      }
    }
  }

  /// Starts the once-a-second check for transfers standing still (no snapshot comes while
  /// nothing moves, so nothing else would redraw them), once (under the lock).
  private func startTicking(_ state: inout State) {
    guard !state.ticking else { return }
    state.ticking = true
    // Holds the bar only while it checks, never across the sleep.
    Task { [weak self] in
      while self?.redrawIfStill() == true {
        try? await Task.sleep(for: .seconds(1))
      }
    }
  }

  /// Redraws when a transfer has stood still for ``stallShownAfter`` or more; false (and the
  /// check ends, until the next update starts it) once the display is stopped or has no rows.
  private func redrawIfStill() -> Bool {
    state.withLock { state in
      guard !state.stopped, !state.rows.isEmpty else {
        state.ticking = false
        return false
      }
      let now = ContinuousClock.now
      let still = state.rows.contains {
        now - $0.at >= Self.stallShownAfter && !Self.isComplete($0.snapshot)
      }
      guard still else { return true }
      state.lastDraw = now
      if state.prompt != nil, let bars = redrawBarsOnly(&state) {
        StandardStream.error.write(bars)
      } else {
        StandardStream.error.write(render(&state))
      }
      return true
    }
  }

  private static func isComplete(_ snapshot: ProgressSnapshot) -> Bool {
    snapshot.totalIsKnown && snapshot.bytes >= snapshot.total
      && snapshot.filesDone == snapshot.fileCount
  }

  /// Shows `prompt` as the last line of the drawing, the cursor after it, until
  /// ``answered(_:)`` or ``endPrompt(then:)``. Without a display it is just written.
  func showPrompt(_ prompt: String) {
    guard enabled else { return StandardStream.error.write(prompt) }
    state.withLock { state in
      var text = ""
      if state.linesDrawn > 0 { text = Self.toFirstLine(state.linesDrawn) + "\u{1B}[J" }
      state.linesDrawn = 0
      state.prompt = prompt
      StandardStream.error.write(text + render(&state))
    }
  }

  /// The person answered `answer` and pressed Enter (the terminal echoed it, and the cursor is
  /// now below the prompt line): the prompt and its answer stay on screen, the bars are drawn
  /// again below them.
  func answered(_ answer: String) {
    guard enabled else { return }
    state.withLock { state in
      guard let prompt = state.prompt else { return }
      state.prompt = nil
      let drawn = state.linesDrawn
      state.linesDrawn = 0
      state.barLinesDrawn = 0
      // Only the prompt was drawn: the echo already shows it with its answer.
      guard drawn > 1 || !state.rows.isEmpty else { return }
      var text = "\r\u{1B}[\(drawn)A\u{1B}[J" + prompt + DisplayText.terminalSafe(answer) + "\n"
      if !state.rows.isEmpty { text += render(&state) }
      StandardStream.error.write(text)
    }
  }

  /// Takes the prompt down unanswered, leaving it on screen followed by `note` (a line of the
  /// program's own; none if empty), and draws the bars again below.
  func endPrompt(then note: String) {
    let after = note.isEmpty ? "" : note + "\n"
    guard enabled else { return StandardStream.error.write("\n" + after) }
    state.withLock { state in
      guard let prompt = state.prompt else { return }
      state.prompt = nil
      var text = Self.toFirstLine(state.linesDrawn) + "\u{1B}[J" + prompt + "\n" + after
      state.linesDrawn = 0
      state.barLinesDrawn = 0
      if !state.rows.isEmpty { text += render(&state) }
      StandardStream.error.write(text)
    }
  }

  /// Lists a question waiting its turn (`label` asks, until `deadline`, while `isPending`);
  /// the ticket takes it off the list (``dequeue(_:)``). Shown at once below a question being
  /// asked.
  func enqueue(
    _ label: String, until deadline: ContinuousClock.Instant,
    isPending: @escaping @Sendable () -> Bool
  ) -> Int {
    state.withLock { state in
      state.nextTicket += 1
      state.waiting.append((state.nextTicket, label, deadline, isPending))
      if enabled, state.prompt != nil { StandardStream.error.write(render(&state)) }
      return state.nextTicket
    }
  }

  /// Takes a waiting question off the list (its turn came, or it was withdrawn).
  func dequeue(_ ticket: Int) {
    state.withLock { state in state.waiting.removeAll { $0.ticket == ticket } }
  }

  /// With a prompt up and as many bar lines as last time: the bars redrawn in place, the
  /// cursor put back where it was (after what the person typed). Nil when the whole drawing
  /// must be redone.
  private func redrawBarsOnly(_ state: inout State) -> String? {
    let columns = Self.terminalColumns()
    let bars = barLines(state, columns: columns)
    guard !bars.isEmpty, bars.count == state.barLinesDrawn else { return nil }
    let up = state.linesDrawn - 1
    return "\u{1B}7\r" + (up > 0 ? "\u{1B}[\(up)A" : "")
      + bars.map { $0 + "\u{1B}[K" }.joined(separator: "\n")
      + "\u{1B}8"
  }

  /// Runs `write` (which prints lines of its own) with the bars erased first and drawn again
  /// below its lines afterwards, so that messages and bars do not garble each other.
  func above(_ write: () -> Void) {
    guard enabled else { return write() }
    state.withLock { state in
      guard !state.stopped else { return write() }
      if state.linesDrawn > 0 {
        StandardStream.error.write(Self.toFirstLine(state.linesDrawn) + "\u{1B}[J")
        state.linesDrawn = 0
      }
      write()
      if !state.rows.isEmpty || state.prompt != nil {
        StandardStream.error.write(render(&state))
      }
    }
  }

  /// Removes the row `label` (its transfer ended) from later drawings.
  func remove(_ label: String) {
    guard enabled else { return }
    state.withLock { state in state.rows.removeAll { $0.label == label } }
  }

  /// Ends the display for good, the last drawing left on screen as it was and the cursor on
  /// the line below it: Ctrl-C calls it first, so that the transfers it then cancels (whose
  /// files end unfinished) draw nothing over what had really arrived.
  func stop() {
    guard enabled else { return }
    state.withLock { state in
      if state.linesDrawn > 0 { StandardStream.error.write("\n") }
      state.stopped = true
      state.rows = []
      state.prompt = nil
      state.linesDrawn = 0
    }
  }

  /// Ends the display (the last drawing stays on screen); later updates start a new one.
  func finish() {
    guard enabled else { return }
    state.withLock { state in
      if state.linesDrawn > 0 { StandardStream.error.write("\n") }
      state.rows = []
      state.linesDrawn = 0
    }
  }

  private func render(_ state: inout State) -> String {
    let columns = Self.terminalColumns()
    var lines = barLines(state, columns: columns)
    state.barLinesDrawn = lines.count
    let waiting = state.waiting.filter { $0.isPending() }
    if state.prompt != nil, !waiting.isEmpty {
      let now = ContinuousClock.now
      let listed = waiting.prefix(3).map { waiting in
        let left = max(0, Int((waiting.deadline - now).inSeconds))
        return "\(BarLayout.shortened(printable(waiting.label), to: 20)) (\(left / 60):"
          + String(format: "%02d", left % 60) + " left)"
      }
      let more = waiting.count > 3 ? " and \(waiting.count - 3) more" : ""
      lines.append("Also waiting to ask: " + listed.joined(separator: ", ") + more)
    }
    if let prompt = state.prompt { lines.append(prompt) }
    // Back to the first line of the previous drawing, then overwrite each line. A line wider
    // than the terminal would wrap, and the next redraw would climb too few lines: cut it.
    let text =
      Self.toFirstLine(state.linesDrawn)
      + lines.map { BarLayout.fitted($0, to: columns) + "\u{1B}[K" }.joined(separator: "\n")
    state.linesDrawn = lines.count
    return text
  }

  /// The bar lines for the rows, fitted to `columns`.
  private func barLines(_ state: State, columns: Int) -> [String] {
    let now = ContinuousClock.now
    var lines: [String] = []
    if state.rows.count == 1, let row = state.rows.first {
      let snapshot = row.snapshot
      if snapshot.fileCount > 1, let file = snapshot.currentFile {
        lines.append(
          BarLayout.line(
            label: printable(file), done: snapshot.currentFileBytes,
            total: snapshot.currentFileSize, totalKnown: snapshot.currentFileSizeIsKnown,
            extras: (nil, nil, nil), columns: columns, bar: 16, name: 32))
      }
      lines.append(
        Self.totalLine(snapshot, label: row.label, still: now - row.at, columns: columns))
    } else {
      lines = state.rows.map {
        Self.totalLine($0.snapshot, label: $0.label, still: now - $0.at, columns: columns)
      }
    }
    return lines
  }

  /// Moves the cursor to the start of the first of the `lines` last drawn.
  private static func toFirstLine(_ lines: Int) -> String {
    lines > 1 ? "\r\u{1B}[\(lines - 1)A" : "\r"
  }

  /// A transfer's total line; `still`: how long since its last snapshot — past
  /// ``stallShownAfter`` it shows that time ("stalled 0:12") instead of a rate and an ETA.
  static func totalLine(
    _ snapshot: ProgressSnapshot, label: String, still: Duration = .zero, columns: Int
  ) -> String {
    let stalled = still >= stallShownAfter && !isComplete(snapshot)
    let rate = stalled ? 0 : snapshot.bytesPerSecond
    var eta: String?
    if stalled {
      let seconds = Int(still.inSeconds)
      eta = "  stalled \(seconds / 60):" + String(format: "%02d", seconds % 60)
    } else if rate > 0, snapshot.totalIsKnown, snapshot.total > snapshot.bytes {
      // A trickle (a slow or hostile peer) gives an ETA beyond any clock: shown as such.
      let seconds = wholeNumber(Double(snapshot.total - snapshot.bytes) / rate)
      eta =
        seconds >= 100 * 3600
        ? "  ETA >99h" : "  ETA \(seconds / 60):" + String(format: "%02d", seconds % 60)
    }
    // The file under way is counted: "file 5/5" while the fifth moves.
    let current =
      snapshot.bytes < snapshot.total || !snapshot.totalIsKnown
      ? min(snapshot.filesDone + 1, snapshot.fileCount) : snapshot.filesDone
    return BarLayout.line(
      label: printable(label), done: snapshot.bytes, total: snapshot.total,
      totalKnown: snapshot.totalIsKnown,
      extras: (
        rate: rate > 0 ? "  \(Quantity.bytes(UInt64(wholeNumber(rate))))/s" : nil, eta: eta,
        files: snapshot.fileCount > 1 ? "  file \(current)/\(snapshot.fileCount)" : nil
      ), columns: columns, bar: 24, name: 20)
  }

  /// The width of the terminal on stderr (80 when it cannot be told), read at each drawing so
  /// that a resized window is followed.
  private static func terminalColumns() -> Int {
    var size = winsize()
    guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
    return Int(size.ws_col)
  }
}
