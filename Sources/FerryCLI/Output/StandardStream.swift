import Foundation
import Synchronization

/// stdout or stderr, written with write(2) — no stdio buffering between ferry and a script
/// reading its NDJSON. To a terminal every write leaves at once (a progress bar and the lines
/// above it must reach it in the order drawn); to a pipe or a file, lines written in a burst
/// (a file-done event and a "Saved" line per file, ten thousand of them a second) are gathered
/// for at most 10 ms, or 64 KiB, and leave in one write(2) — a script still sees each line
/// within 10 ms. Everything gathered leaves before the process exits (``flushAll()``, called
/// by ``Interrupts/exit(_:)``).
enum StandardStream: Sendable {
  /// Standard output, file descriptor 1.
  case output
  /// Standard error, file descriptor 2.
  case error

  /// Writes `text` whole (retrying on partial writes and EINTR; a closed pipe drops the rest),
  /// at once to a terminal, within 10 ms otherwise. Any thread.
  func write(_ text: String) {
    let pending = Self.pending[self == .output ? 0 : 1]
    guard !isTerminal else {
      // What was gathered first, so that lines keep their order.
      pending.flush()
      return Self.writeAll(fd, Array(text.utf8)[...])
    }
    pending.append(text)
  }

  /// Writes out what every stream gathered. Any thread; before the process exits.
  static func flushAll() {
    for stream in pending { stream.flush() }
  }

  /// Whether the stream is a terminal.
  var isTerminal: Bool { Self.terminal[self == .output ? 0 : 1] }

  private var fd: Int32 { self == .output ? 1 : 2 }

  /// Whether each stream is a terminal, read once.
  private static let terminal = [isatty(1) == 1, isatty(2) == 1]
  private static let pending = [Pending(fd: 1), Pending(fd: 2)]

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

  /// What one stream gathered and has not written yet.
  fileprivate final class Pending: Sendable {
    let fd: Int32
    /// The bytes, and whether a flush is scheduled.
    private let state = Mutex<(bytes: [UInt8], scheduled: Bool)>(([], false))
    /// Written in one go from this many bytes on.
    static let limit = 64 << 10

    init(fd: Int32) { self.fd = fd }

    func append(_ text: String) {
      let (full, schedule) = state.withLock { state -> (Bool, Bool) in
        state.bytes.append(contentsOf: text.utf8)
        let schedule = !state.scheduled
        state.scheduled = true
        return (state.bytes.count >= Self.limit, schedule)
      }
      if full { return flush() }
      if schedule {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(10)) { self.flush() }
      }
    }

    /// Writes what is gathered, under the lock: two flushes never interleave their bytes.
    func flush() {
      state.withLock { state in
        state.scheduled = false
        guard !state.bytes.isEmpty else { return }
        StandardStream.writeAll(fd, state.bytes[...])
        state.bytes.removeAll(keepingCapacity: true)
      }
    }
  }
}
