import Foundation
import Synchronization

/// Foundation `Progress` for a transfer — ``overall`` in bytes, and one per file — plus an
/// `AsyncStream` of throttled ``ProgressSnapshot``s.
///
/// Thread-safe: the sender updates it from its task and, for each FILE_ACK, from the event loop,
/// so every update (the `Progress` objects' included) happens under one lock. Foundation's
/// `Progress` on Linux has no lock of its own: an application reading ``overall`` from another
/// thread reads it unsynchronized, and should prefer ``snapshots``. Per-file `Progress` objects
/// are made when first asked for and are not children of ``overall``: Foundation updates a
/// parent by walking all its children, which makes batches of thousands of files quadratic;
/// ``overall`` is kept as the running sum instead. Updates are throttled (per MiB or 100 ms) so
/// they cost nothing measurable.
public final class TransferProgress: @unchecked Sendable {
  /// The whole transfer, in bytes. `cancel()` cancels the transfer on both ends.
  public let overall: Progress
  /// Snapshots, at most ~10 per second plus the final one; only the newest is buffered.
  public let snapshots: AsyncStream<ProgressSnapshot>

  /// What changes as the transfer goes, with the `Progress` objects it writes.
  private struct State {
    var files: [Int: Progress] = [:]
    var done: [Int64]
    var reported: [Int64]
    var finished: [Bool]
    var sum: Int64 = 0
    var filesDone = 0
    /// Files that ended unfinished (failed or cancelled), and the bytes they never had:
    /// snapshots leave both out, so that a cancelled transfer never reads as complete.
    var filesFailed = 0
    var bytesMissing: Int64 = 0
    /// Bytes counted done for which no data crossed (holes of sparse files, prefixes resumed):
    /// the rate leaves them out (a 10 GB hole is not 10 GB/s).
    var uncrossed: Int64 = 0
    /// Files that data was written or read for (``advance(_:to:uncrossed:)``): one completed
    /// without any (skipped, identical) had none of its bytes cross.
    var advanced: [Bool]
    var lastPublished = ContinuousClock.now - .seconds(1)
    var rateMark: (time: ContinuousClock.Instant, bytes: Int64) = (.now, 0)
    var rate = 0.0
  }

  private let continuation: AsyncStream<ProgressSnapshot>.Continuation
  private let sizes: [Int64]
  private let names: [String]
  private let byteSizes: [Int64]
  private let state: Mutex<State>

  init(files entries: [(name: String, size: UInt64)]) {
    // An empty file counts as one unit, so that it too goes from 0 to 1.
    sizes = entries.map { Int64(max($0.size, 1)) }
    names = entries.map(\.name)
    byteSizes = entries.map { Int64($0.size) }
    overall = Progress(totalUnitCount: sizes.reduce(0, +))
    overall.kind = .file
    let zeros = [Int64](repeating: 0, count: entries.count)
    state = Mutex(
      State(
        done: zeros, reported: zeros, finished: Array(repeating: false, count: entries.count),
        advanced: Array(repeating: false, count: entries.count)))
    (snapshots, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
  }

  /// The progress of file `index` (in bytes; made on first use).
  func file(_ index: Int) -> Progress {
    state.withLock { state in
      if let progress = state.files[index] { return progress }
      let progress = Progress(totalUnitCount: sizes[index])
      progress.completedUnitCount =
        state.finished[index] ? sizes[index] : min(state.reported[index], sizes[index] - 1)
      state.files[index] = progress
      return progress
    }
  }

  /// File `index` has `bytes` done (not yet complete), `uncrossed` of the bytes since the last
  /// call done without any data crossing (a sparse file's holes, a prefix already there on a
  /// resume): counted in `bytes`, left out of the rate.
  func advance(_ index: Int, to bytes: UInt64, uncrossed: UInt64 = 0) {
    let snapshot = state.withLock { state -> ProgressSnapshot? in
      guard !state.finished[index] else { return nil }
      state.uncrossed += Int64(clamping: uncrossed)
      state.advanced[index] = true
      // Never reach the total before `complete`: fractionCompleted hits 1.0 exactly once.
      let value = min(Int64(bytes), sizes[index] - 1)
      state.sum += value - state.done[index]
      state.done[index] = value
      guard
        value - state.reported[index] >= 1 << 20
          || ContinuousClock.now - state.lastPublished >= .milliseconds(100)
      else { return nil }
      state.reported[index] = value
      state.files[index]?.completedUnitCount = value
      overall.completedUnitCount = state.sum
      return dueSnapshot(index, force: false, &state)
    }
    if let snapshot { continuation.yield(snapshot) }
  }

  /// Bytes whose data crossed the link so far: done, less holes, resumed prefixes and files
  /// completed without data (skipped, identical). Any thread.
  public var bytesCrossed: Int64 {
    state.withLock { max(0, $0.sum - $0.bytesMissing - $0.uncrossed) }
  }

  /// File `index` is finished (stored, skipped or, when `failed`, failed or cancelled): its
  /// `Progress` is complete, once. A failed file's missing bytes are left out of the snapshots
  /// (their `bytes` and `filesDone` count what really arrived or was sent).
  func complete(_ index: Int, failed: Bool = false) {
    let snapshot = state.withLock { state -> ProgressSnapshot? in
      guard !state.finished[index] else { return nil }
      state.finished[index] = true
      if failed {
        state.filesFailed += 1
        state.bytesMissing += sizes[index] - state.done[index]
      }
      // Completed without data (skipped, identical): done, but nothing crossed for it.
      if !failed, !state.advanced[index] { state.uncrossed += sizes[index] - state.done[index] }
      state.sum += sizes[index] - state.done[index]
      // A failed file's row keeps what arrived (its `Progress` still completes, once).
      if !failed { state.done[index] = sizes[index] }
      state.reported[index] = sizes[index]
      state.files[index]?.completedUnitCount = sizes[index]
      state.filesDone += 1
      let last = state.filesDone == sizes.count
      if last || ContinuousClock.now - state.lastPublished >= .milliseconds(100) {
        overall.completedUnitCount = state.sum
      }
      return dueSnapshot(index, force: last, &state)
    }
    if let snapshot { continuation.yield(snapshot) }
  }

  /// Ends the snapshot stream.
  func finish() {
    state.withLock { overall.completedUnitCount = $0.sum }
    continuation.finish()
  }

  /// The snapshot to publish now, if one is due (under the lock).
  private func dueSnapshot(_ index: Int, force: Bool, _ state: inout State) -> ProgressSnapshot? {
    let now = ContinuousClock.now
    guard force || now - state.lastPublished >= .milliseconds(100) else { return nil }
    state.lastPublished = now
    // The rate over the last half second or more; a transfer done sooner gets its average.
    let elapsed = now - state.rateMark.time
    if elapsed >= .milliseconds(500) || (force && state.rate == 0 && elapsed > .zero) {
      let seconds =
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      let bytes = state.sum - state.bytesMissing - state.uncrossed
      state.rate = max(0, Double(bytes - state.rateMark.bytes) / seconds)
      state.rateMark = (now, bytes)
    }
    return ProgressSnapshot(
      bytes: state.sum - state.bytesMissing, total: overall.totalUnitCount,
      bytesPerSecond: state.rate, filesDone: state.filesDone - state.filesFailed,
      fileCount: sizes.count, currentFile: names[index],
      currentFileBytes: min(state.done[index], byteSizes[index]),
      currentFileSize: byteSizes[index])
  }
}
