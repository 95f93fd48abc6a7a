import Foundation

/// stdout or stderr, written with write(2) so that every line leaves the process at once (no
/// stdio buffering between ferry and a script reading its NDJSON).
enum StandardStream: Sendable {
  /// Standard output, file descriptor 1.
  case output
  /// Standard error, file descriptor 2.
  case error

  /// Writes `text` whole, retrying on partial writes and EINTR; a closed pipe drops the rest.
  func write(_ text: String) {
    let fd: Int32 = self == .output ? 1 : 2
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
      let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
      if written < 0 {
        if errno == EINTR { continue }
        return
      }
      bytes = bytes.dropFirst(written)
    }
  }

  /// Whether the stream is a terminal.
  var isTerminal: Bool {
    isatty(self == .output ? 1 : 2) == 1
  }
}
