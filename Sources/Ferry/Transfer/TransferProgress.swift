import Foundation

/// A point-in-time view of a transfer's progress, for observers (Linux has no KVO on
/// `Progress`).
public struct ProgressSnapshot: Hashable, Sendable {
  /// Bytes done (sent, or written and hashed).
  public let bytes: Int64
  /// Bytes in the whole transfer.
  public let total: Int64
  /// Recent rate, bytes per second.
  public let bytesPerSecond: Double
  /// Files finished.
  public let filesDone: Int
  /// Files in the transfer.
  public let fileCount: Int
  /// The file in progress, if any.
  public let currentFile: String?
}

/// Foundation `Progress` for a transfer (its ``overall`` progress has one child per file, byte
/// units) and an `AsyncStream` of throttled ``ProgressSnapshot``s.
///
/// Updated from one serial context only (the transfer's queue or task), as Foundation on
/// Linux requires for sibling children; updates are throttled so they cost nothing measurable.
public final class TransferProgress: @unchecked Sendable {
  /// The whole transfer, in bytes. `cancel()` cancels the transfer on both ends.
  public let overall: Progress
  /// Snapshots, at most ~10 per second plus the final one; only the newest is buffered.
  public let snapshots: AsyncStream<ProgressSnapshot>

  private let continuation: AsyncStream<ProgressSnapshot>.Continuation
  private let files: [Progress]
  private let names: [String]
  private var done: [Int64]
  private var reported: [Int64]
  private var filesDone = 0
  private var lastPublished = ContinuousClock.now - .seconds(1)
  private var rateMark: (time: ContinuousClock.Instant, bytes: Int64) = (.now, 0)
  private var rate = 0.0

  init(files entries: [(name: String, size: UInt64)]) {
    let units = entries.map { Int64(max($0.size, 1)) }
    overall = Progress(totalUnitCount: units.reduce(0, +))
    overall.kind = .file
    var children: [Progress] = []
    for units in units {
      let child = Progress(totalUnitCount: units)
      overall.addChild(child, withPendingUnitCount: units)
      children.append(child)
    }
    files = children
    names = entries.map(\.name)
    done = Array(repeating: 0, count: entries.count)
    reported = done
    (snapshots, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
  }

  /// The progress of file `index`.
  func file(_ index: Int) -> Progress { files[index] }

  /// File `index` has `bytes` done (not yet complete).
  func advance(_ index: Int, to bytes: UInt64) {
    done[index] = Int64(bytes)
    // Foundation's Progress propagates every change to its parent: update it per MiB (or
    // every 100 ms) only.
    guard
      Int64(bytes) - reported[index] >= 1 << 20
        || ContinuousClock.now - lastPublished >= .milliseconds(100)
    else { return }
    reported[index] = Int64(bytes)
    let units = files[index].totalUnitCount
    // Never reach the total before `complete`: fractionCompleted hits 1.0 exactly once.
    if Int64(bytes) < units {
      files[index].completedUnitCount = Int64(bytes)
    }
    publish(index, force: false)
  }

  /// File `index` is finished (stored, skipped or failed): its progress is complete.
  func complete(_ index: Int) {
    guard files[index].completedUnitCount < files[index].totalUnitCount else { return }
    files[index].completedUnitCount = files[index].totalUnitCount
    done[index] = files[index].totalUnitCount
    filesDone += 1
    publish(index, force: filesDone == files.count)
  }

  /// Ends the snapshot stream.
  func finish() {
    continuation.finish()
  }

  private func publish(_ index: Int, force: Bool) {
    let now = ContinuousClock.now
    guard force || now - lastPublished >= .milliseconds(100) else { return }
    lastPublished = now
    let bytes = done.reduce(0, +)
    let elapsed = now - rateMark.time
    if elapsed >= .milliseconds(500) {
      let seconds =
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      rate = Double(bytes - rateMark.bytes) / seconds
      rateMark = (now, bytes)
    }
    continuation.yield(
      ProgressSnapshot(
        bytes: bytes, total: overall.totalUnitCount, bytesPerSecond: rate, filesDone: filesDone,
        fileCount: files.count, currentFile: names[index]))
  }
}
