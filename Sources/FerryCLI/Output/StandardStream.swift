import Foundation
import Synchronization

/// stdout or stderr, written with write(2) — no stdio buffering between ferry and a script
/// reading its NDJSON. To a terminal every write leaves at once (a progress bar and the lines
/// above it must reach it in the order drawn). To a pipe or a file, lines are handed to a
/// writer of the stream's own and gathered for at most 10 ms, or 64 KiB, into one write(2) —
/// a script still sees each line within 10 ms, and the thread that wrote it (a receiver
/// answering its peer) never waits for the reader. A reader that stops reading costs at most
/// ``Pending/droppableLimit`` of progress lines (then they are dropped, and stderr says how
/// many once the reader is back) and ``Pending/limit`` in all. What was gathered leaves
/// before the process exits (``flushAll()``, called by ``Interrupts/exit(_:)``), given
/// ``exitPatience`` when the reader is stuck.
enum StandardStream: Sendable {
  /// Standard output, file descriptor 1.
  case output
  /// Standard error, file descriptor 2.
  case error

  /// How long the exit waits for a reader that does not read what is left.
  static let exitPatience = DispatchTimeInterval.seconds(5)

  /// Writes `text` whole (retrying on partial writes and EINTR; a closed pipe drops the rest),
  /// at once to a terminal, within 10 ms otherwise. `droppable`: a line a stuck reader may
  /// lose (progress, whose next line says all it said). Any thread; never waits for a pipe.
  func write(_ text: String, droppable: Bool = false) {
    guard !isTerminal else { return Self.writeAll(fd, Array(text.utf8)[...]) }
    Self.pending[self == .output ? 0 : 1].append(text, droppable: droppable)
  }

  /// Writes out what every stream gathered, waiting at most ``exitPatience`` for them all.
  /// Any thread; before the process exits.
  static func flushAll() {
    let deadline = DispatchTime.now() + exitPatience
    // Both at once, each on its writer: a stuck stdout never holds stderr's last lines back.
    let (output, error) = (pending[0].drained(), pending[1].drained())
    // stdout gets all but a second: what it could not write is then said on stderr.
    if output.wait(timeout: deadline - .seconds(1)) == .timedOut {
      let left = pending[0].waiting
      StandardStream.error.write(
        "ferry: stdout was not read: up to \(left) bytes of output not written\n")
    }
    _ = error.wait(timeout: deadline)
    // Again: what stdout's drain or the line above added to stderr since.
    _ = pending[1].drained().wait(timeout: deadline)
  }

  /// Whether the stream is a terminal.
  var isTerminal: Bool { Self.terminal[self == .output ? 0 : 1] }

  private var fd: Int32 { self == .output ? 1 : 2 }

  /// Whether each stream is a terminal, read once.
  private static let terminal = [isatty(1) == 1, isatty(2) == 1]
  private static let pending = [Pending(fd: 1, name: "stdout"), Pending(fd: 2, name: "stderr")]

  fileprivate static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) {
    var bytes = bytes
    while !bytes.isEmpty {
      let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
      if written < 0 {
        if errno == EINTR { continue }
        return
      }
      bytes = bytes.dropFirst(written)
    }
  }

  /// What one stream gathered and its writer has not written yet. The writer is a serial
  /// queue: one write(2) at a time, in the order the lines came.
  fileprivate final class Pending: Sendable {
    let fd: Int32
    let name: String
    private let writer: DispatchQueue
    /// The bytes, whether the writer is due, the bytes the writer holds (written or waiting
    /// for the reader), and the lines dropped since the reader last took everything.
    private let state = Mutex<(bytes: [UInt8], scheduled: Bool, writing: Int, dropped: Int)>(
      ([], false, 0, 0))
    /// Written at once (not after 10 ms) from this many bytes on.
    static let batch = 64 << 10
    /// Past this many bytes waiting, droppable lines are dropped.
    static let droppableLimit = 1 << 20
    /// Past this many bytes waiting, every line is dropped.
    static let limit = 16 << 20

    init(fd: Int32, name: String) {
      self.fd = fd
      self.name = name
      writer = DispatchQueue(label: "ferry.\(name)")
    }

    func append(_ text: String, droppable: Bool) {
      let (now, later) = state.withLock { state -> (Bool, Bool) in
        let waiting = state.writing + state.bytes.count + text.utf8.count
        guard waiting <= (droppable ? Self.droppableLimit : Self.limit) else {
          state.dropped += 1
          return (false, false)
        }
        state.bytes.append(contentsOf: text.utf8)
        // One drain due at a time: a stuck reader piles up bytes, not queued work.
        guard !state.scheduled else { return (false, false) }
        state.scheduled = true
        return state.bytes.count >= Self.batch ? (true, false) : (false, true)
      }
      if now {
        writer.async { self.drain() }
      } else if later {
        writer.asyncAfter(deadline: .now() + .milliseconds(10)) { self.drain() }
      }
    }

    /// On the writer: writes everything gathered (waiting for the reader, outside the lock),
    /// then says on stderr how many lines a stuck stdout lost.
    private func drain() {
      let bytes = state.withLock { state -> [UInt8] in
        state.scheduled = false
        state.writing = state.bytes.count
        defer { state.bytes = [] }
        return state.bytes
      }
      guard !bytes.isEmpty else { return }
      StandardStream.writeAll(fd, bytes[...])
      let dropped = state.withLock { state -> Int in
        state.writing = 0
        guard state.bytes.isEmpty else { return 0 }
        defer { state.dropped = 0 }
        return state.dropped
      }
      if dropped > 0, fd == 1 {
        StandardStream.error.write(
          "ferry: \(dropped) line\(dropped == 1 ? "" : "s") not written: stdout was not read\n")
      }
    }

    /// The bytes gathered or being written, not yet taken by the reader (any thread).
    var waiting: Int { state.withLock { $0.writing + $0.bytes.count } }

    /// Has the writer write what is left; the semaphore is signalled once it is written.
    func drained() -> DispatchSemaphore {
      let done = DispatchSemaphore(value: 0)
      writer.async {
        self.drain()
        done.signal()
      }
      return done
    }
  }
}
