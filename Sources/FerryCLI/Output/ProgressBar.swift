import Ferry
import Foundation
import Synchronization

/// A one-line progress bar on stderr, redrawn at most ~10 times a second (snapshots are already
/// throttled); nothing at all when stderr is not a terminal.
final class ProgressBar: Sendable {
  private let enabled: Bool
  private let drawn = Atomic<Bool>(false)

  init(enabled: Bool) {
    self.enabled = enabled
  }

  func draw(_ snapshot: ProgressSnapshot) {
    guard enabled else { return }
    drawn.store(true, ordering: .relaxed)
    let fraction = snapshot.total > 0 ? Double(snapshot.bytes) / Double(snapshot.total) : 1
    let width = 24
    let filled = Int(fraction * Double(width))
    let rate = snapshot.bytesPerSecond
    let eta = rate > 0 ? Int(Double(snapshot.total - snapshot.bytes) / rate) : nil
    var line =
      "\r[" + String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
      + "] "
    line += String(format: "%3d%%", Int(fraction * 100))
    line += "  \(formatBytes(UInt64(snapshot.bytes)))/\(formatBytes(UInt64(snapshot.total)))"
    line += "  \(formatBytes(UInt64(rate)))/s"
    if let eta { line += "  ETA \(eta / 60):" + String(format: "%02d", eta % 60) }
    line += "  file \(snapshot.filesDone)/\(snapshot.fileCount)\u{1B}[K"
    StandardStream.error.write(line)
  }

  func finish() {
    if enabled && drawn.load(ordering: .relaxed) { StandardStream.error.write("\n") }
  }
}
