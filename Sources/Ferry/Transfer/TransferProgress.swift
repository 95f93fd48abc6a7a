import Foundation

/// Foundation `Progress` for a transfer — ``overall`` in bytes, and one per file — plus an
/// `AsyncStream` of throttled ``ProgressSnapshot``s.
///
/// Updated from one serial context only (the transfer's queue or task), as Foundation on Linux
/// requires. Per-file `Progress` objects are made when first asked for and are not children of
/// ``overall``: Foundation updates a parent by walking all its children, which makes batches of
/// thousands of files quadratic; ``overall`` is kept as the running sum instead. Updates are
/// throttled (per MiB or 100 ms) so they cost nothing measurable.
public final class TransferProgress: @unchecked Sendable {
  /// The whole transfer, in bytes. `cancel()` cancels the transfer on both ends.
  public let overall: Progress
  /// Snapshots, at most ~10 per second plus the final one; only the newest is buffered.
  public let snapshots: AsyncStream<ProgressSnapshot>

  private let continuation: AsyncStream<ProgressSnapshot>.Continuation
  private let sizes: [Int64]
  private let names: [String]
  private let byteSizes: [Int64]
  private var files: [Int: Progress] = [:]
  private var done: [Int64]
  private var reported: [Int64]
  private var finished: [Bool]
  private var sum: Int64 = 0
  private var filesDone = 0
  private var lastPublished = ContinuousClock.now - .seconds(1)
  private var rateMark: (time: ContinuousClock.Instant, bytes: Int64) = (.now, 0)
  private var rate = 0.0

  init(files entries: [(name: String, size: UInt64)]) {
    // An empty file counts as one unit, so that it too goes from 0 to 1.
    sizes = entries.map { Int64(max($0.size, 1)) }
    names = entries.map(\.name)
    byteSizes = entries.map { Int64($0.size) }
    overall = Progress(totalUnitCount: sizes.reduce(0, +))
    overall.kind = .file
    done = Array(repeating: 0, count: entries.count)
    reported = done
    finished = Array(repeating: false, count: entries.count)
    (snapshots, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
  }

  /// The progress of file `index` (in bytes; made on first use).
  func file(_ index: Int) -> Progress {
    if let progress = files[index] { return progress }
    let progress = Progress(totalUnitCount: sizes[index])
    progress.completedUnitCount =
      finished[index] ? sizes[index] : min(reported[index], sizes[index] - 1)
    files[index] = progress
    return progress
  }

  /// File `index` has `bytes` done (not yet complete).
  func advance(_ index: Int, to bytes: UInt64) {
    guard !finished[index] else { return }
    // Never reach the total before `complete`: fractionCompleted hits 1.0 exactly once.
    let value = min(Int64(bytes), sizes[index] - 1)
    sum += value - done[index]
    done[index] = value
    guard
      value - reported[index] >= 1 << 20
        || ContinuousClock.now - lastPublished >= .milliseconds(100)
    else { return }
    reported[index] = value
    files[index]?.completedUnitCount = value
    overall.completedUnitCount = sum
    publish(index, force: false)
  }

  /// File `index` is finished (stored, skipped or failed): its progress is complete, once.
  func complete(_ index: Int) {
    guard !finished[index] else { return }
    finished[index] = true
    sum += sizes[index] - done[index]
    done[index] = sizes[index]
    reported[index] = sizes[index]
    files[index]?.completedUnitCount = sizes[index]
    filesDone += 1
    let last = filesDone == sizes.count
    if last || ContinuousClock.now - lastPublished >= .milliseconds(100) {
      overall.completedUnitCount = sum
    }
    publish(index, force: last)
  }

  /// Ends the snapshot stream.
  func finish() {
    overall.completedUnitCount = sum
    continuation.finish()
  }

  private func publish(_ index: Int, force: Bool) {
    let now = ContinuousClock.now
    guard force || now - lastPublished >= .milliseconds(100) else { return }
    lastPublished = now
    // The rate over the last half second or more; a transfer done sooner gets its average.
    let elapsed = now - rateMark.time
    if elapsed >= .milliseconds(500) || (force && rate == 0 && elapsed > .zero) {
      let seconds =
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      rate = Double(sum - rateMark.bytes) / seconds
      rateMark = (now, sum)
    }
    continuation.yield(
      ProgressSnapshot(
        bytes: sum, total: overall.totalUnitCount, bytesPerSecond: rate, filesDone: filesDone,
        fileCount: sizes.count, currentFile: names[index],
        currentFileBytes: min(done[index], byteSizes[index]), currentFileSize: byteSizes[index]))
  }
}
