import ArgumentParser
import Ferry
import FerryAgent
import Logging

/// Writes the library's log lines on stderr, one per line, for `-v` and `FERRY_LOG`:
/// `ferry[notice] remote=… peer=…: message`. What came from a peer (names, reasons) is shown
/// with control, format and bidirectional characters escaped, newlines included.
struct TerminalLogHandler: LogHandler {
  var logLevel: Logger.Level
  var metadata: Logger.Metadata = [:]

  subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  func log(event: LogEvent) {
    let fields = metadata.merging(event.metadata ?? [:]) { $1 }
      .sorted { $0.key < $1.key }
      .map { " \($0.key)=\($0.value)" }.joined()
    let line = "ferry[\(event.level)]\(fields): \(event.message)"
    StandardStream.error.write(printable(line, limit: 4096) + "\n")
  }
}
