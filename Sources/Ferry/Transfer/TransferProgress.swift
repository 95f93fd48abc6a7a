import Dispatch
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
///
/// One record per file (its size, what is done and reported, its `Progress`). A streamed file
/// (``ResourceItem/isStreamed``) has no size until it ends: while it is open it
/// counts as one byte more than has arrived (so that it never reads as complete), the totals
/// grow with it, and snapshots say the total is not known yet.
public final class TransferProgress: @unchecked Sendable {
  /// The whole transfer, in bytes. `cancel()` cancels the transfer on both ends.
  public let overall: Progress
  /// Snapshots, at most ~10 per second plus the final one; only the newest is buffered.
  public let snapshots: AsyncStream<ProgressSnapshot>

  /// One file, as its progress goes.
  private struct FileRecord {
    let name: String
    /// Its size in bytes (0 for a streamed file: not known).
    let bytes: Int64
    /// Whether it is streamed: its size is what arrives.
    let streamed: Bool
    /// Its units: its size (1 for an empty file); for a streamed file still open, one more
    /// than its bytes so far.
    var units: Int64
    /// Units done; at most `units - 1` until it completes.
    var done: Int64 = 0
    /// Units last published (to its `Progress` and in a snapshot).
    var reported: Int64 = 0
    /// For a streamed file: the bytes it holds so far (its size once it ended).
    var streamedBytes: Int64 = 0
    var finished = false
    /// Whether data was written or read for it (``advance(_:to:uncrossed:)``): one completed
    /// without any (skipped, identical) had none of its bytes cross.
    var advanced = false
    /// Its `Progress`, once asked for.
    var progress: Progress?

    /// Whether it is a streamed file still open.
    var isOpenStream: Bool { streamed && !finished }
    /// Its bytes as a snapshot shows them: so far, and its size (a streamed file's so far).
    var shownBytes: (done: Int64, size: Int64) {
      streamed ? (streamedBytes, streamedBytes) : (min(done, bytes), bytes)
    }
  }

  /// What changes as the transfer goes, with the `Progress` objects it writes.
  private struct State {
    var files: [FileRecord]
    /// Streamed files not finished yet: while any is, the total is not known.
    var openStreams: Int
    var sum: Int64 = 0
    var filesDone = 0
    /// Files that ended unfinished (failed or cancelled), and the bytes they never had:
    /// snapshots leave both out, so that a cancelled transfer never reads as complete.
    var filesFailed = 0
    var bytesMissing: Int64 = 0
    /// Bytes counted done for which no data crossed (holes of sparse files, prefixes resumed):
    /// the rate leaves them out (a 10 GB hole is not 10 GB/s).
    var uncrossed: Int64 = 0
    var lastPublished = ContinuousClock.now - .seconds(1)
    /// The file whose snapshot was held back by the throttle, if one was.
    var heldBack: Int?
    /// Whether a late publication of it is scheduled.
    var trailing = false
    var rateMark: (time: ContinuousClock.Instant, bytes: Int64) = (.now, 0)
    var rate = 0.0
  }

  private let continuation: AsyncStream<ProgressSnapshot>.Continuation
  private let state: Mutex<State>

  /// - Parameter streamed: Per file, whether it is streamed (its size, 0, is not known yet);
  ///   none when empty.
  package init(files entries: [(name: String, size: UInt64)], streamed: [Bool] = []) {
    // An empty file counts as one unit, so that it too goes from 0 to 1.
    let files = entries.indices.map { index in
      FileRecord(
        name: entries[index].name, bytes: Int64(entries[index].size),
        streamed: streamed.indices.contains(index) && streamed[index],
        units: Int64(max(entries[index].size, 1)))
    }
    overall = Progress(totalUnitCount: files.reduce(0) { $0 + $1.units })
    overall.kind = .file
    state = Mutex(State(files: files, openStreams: files.count { $0.streamed }))
    (snapshots, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
  }

  /// The progress of file `index` (in bytes; made on first use).
  package func file(_ index: Int) -> Progress {
    state.withLock { state in
      if let progress = state.files[index].progress { return progress }
      let file = state.files[index]
      let progress = Progress(totalUnitCount: file.units)
      progress.completedUnitCount = file.finished ? file.units : min(file.reported, file.units - 1)
      state.files[index].progress = progress
      return progress
    }
  }

  /// File `index` has `bytes` done (not yet complete), `uncrossed` of the bytes since the last
  /// call done without any data crossing (a sparse file's holes, a prefix already there on a
  /// resume): counted in `bytes`, left out of the rate.
  package func advance(_ index: Int, to bytes: UInt64, uncrossed: UInt64 = 0) {
    let snapshot = state.withLock { state -> ProgressSnapshot? in
      guard !state.files[index].finished else { return nil }
      state.uncrossed += Int64(clamping: uncrossed)
      state.files[index].advanced = true
      // A streamed file grows as it comes: one unit more than it holds, until it ends.
      if state.files[index].streamed {
        state.files[index].streamedBytes = Int64(clamping: bytes)
        if Int64(clamping: bytes) >= state.files[index].units {
          grow(index, to: Int64(clamping: bytes) + 1, &state)
        }
      }
      // Never reach the total before `complete`: fractionCompleted hits 1.0 exactly once.
      let value = min(Int64(clamping: bytes), state.files[index].units - 1)
      state.sum += value - state.files[index].done
      state.files[index].done = value
      guard
        value - state.files[index].reported >= 1 << 20
          || ContinuousClock.now - state.lastPublished >= .milliseconds(100)
      else { return holdBack(index, &state) }
      state.files[index].reported = value
      state.files[index].progress?.completedUnitCount = value
      overall.completedUnitCount = state.sum
      return dueSnapshot(index, force: false, &state) ?? holdBack(index, &state)
    }
    if let snapshot { continuation.yield(snapshot) }
  }

  /// Holds file `index`'s snapshot back (the throttle): it is published shortly unless a newer
  /// one goes first, so that a transfer that pauses (a pipe waiting for its writer, a link
  /// that stalls) shows where it stands. Under the lock; returns nil.
  private func holdBack(_ index: Int, _ state: inout State) -> ProgressSnapshot? {
    state.heldBack = index
    if !state.trailing {
      state.trailing = true
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(150)) {
        [weak self] in self?.publishHeldBack()
      }
    }
    return nil
  }

  /// Publishes the snapshot ``advance(_:to:uncrossed:)`` held back, if no newer one went.
  private func publishHeldBack() {
    let snapshot = state.withLock { state -> ProgressSnapshot? in
      state.trailing = false
      guard let index = state.heldBack, !state.files[index].finished else { return nil }
      // Never more often than the throttle allows: later, then.
      guard ContinuousClock.now - state.lastPublished >= .milliseconds(100) else {
        return holdBack(index, &state)
      }
      state.heldBack = nil
      state.files[index].reported = state.files[index].done
      state.files[index].progress?.completedUnitCount = state.files[index].done
      overall.completedUnitCount = state.sum
      return dueSnapshot(index, force: true, &state)
    }
    if let snapshot { continuation.yield(snapshot) }
  }

  /// The transfer's size in bytes: every file's, a streamed file's counted as what it holds so
  /// far (its size once it ended). Any thread.
  public var totalBytes: Int64 {
    state.withLock { state in
      state.files.reduce(Int64(0)) { $0 + ($1.streamed ? $1.streamedBytes : $1.bytes) }
    }
  }

  /// Bytes whose data crossed the link so far: done, less holes, resumed prefixes and files
  /// completed without data (skipped, identical). Any thread.
  public var bytesCrossed: Int64 {
    state.withLock { max(0, $0.sum - $0.bytesMissing - $0.uncrossed) }
  }

  /// File `index` is finished (stored, skipped or, when `failed`, failed or cancelled): its
  /// `Progress` is complete, once. A failed file's missing bytes are left out of the snapshots
  /// (their `bytes` and `filesDone` count what really arrived or was sent). `unsent`: none of
  /// what is left of it crossed (the receiver did not want it), though it was started.
  package func complete(_ index: Int, failed: Bool = false, unsent: Bool = false) {
    let snapshot = state.withLock { state -> ProgressSnapshot? in
      guard !state.files[index].finished else { return nil }
      // A streamed file's size is what it came to.
      if state.files[index].streamed {
        state.openStreams -= 1
        grow(index, to: max(state.files[index].done, 1), &state)
      }
      state.files[index].finished = true
      if state.heldBack == index { state.heldBack = nil }
      let file = state.files[index]
      if failed {
        state.filesFailed += 1
        state.bytesMissing += file.units - file.done
      }
      // Completed without data (skipped, identical): done, but nothing crossed for it.
      if !failed, !file.advanced || unsent { state.uncrossed += file.units - file.done }
      state.sum += file.units - file.done
      // A failed file's row keeps what arrived (its `Progress` still completes, once).
      if !failed { state.files[index].done = file.units }
      state.files[index].reported = file.units
      file.progress?.completedUnitCount = file.units
      state.filesDone += 1
      let last = state.filesDone == state.files.count
      if last || ContinuousClock.now - state.lastPublished >= .milliseconds(100) {
        overall.completedUnitCount = state.sum
      }
      return dueSnapshot(index, force: last, &state)
    }
    if let snapshot { continuation.yield(snapshot) }
  }

  /// Ends the snapshot stream.
  package func finish() {
    state.withLock { overall.completedUnitCount = $0.sum }
    continuation.finish()
  }

  /// The snapshot to publish now, if one is due (under the lock).
  private func dueSnapshot(_ index: Int, force: Bool, _ state: inout State) -> ProgressSnapshot? {
    let now = ContinuousClock.now
    guard force || now - state.lastPublished >= .milliseconds(100) else { return nil }
    state.lastPublished = now
    state.heldBack = nil
    // The rate over the last half second or more; a transfer done sooner gets its average.
    let elapsed = now - state.rateMark.time
    if elapsed >= .milliseconds(500) || (force && state.rate == 0 && elapsed > .zero) {
      let seconds =
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      let bytes = state.sum - state.bytesMissing - state.uncrossed
      state.rate = max(0, Double(bytes - state.rateMark.bytes) / seconds)
      state.rateMark = (now, bytes)
    }
    let file = state.files[index]
    return ProgressSnapshot(
      bytes: state.sum - state.bytesMissing, total: overall.totalUnitCount,
      bytesPerSecond: state.rate, filesDone: state.filesDone - state.filesFailed,
      fileCount: state.files.count, currentFile: file.name,
      currentFileBytes: file.shownBytes.done, currentFileSize: file.shownBytes.size,
      totalIsKnown: state.openStreams == 0, currentFileSizeIsKnown: !file.isOpenStream)
  }

  /// Sets streamed file `index`'s units to `size`, the overall total with it (under the lock).
  private func grow(_ index: Int, to size: Int64, _ state: inout State) {
    let change = size - state.files[index].units
    guard change != 0 else { return }
    state.files[index].units = size
    overall.totalUnitCount += change
    state.files[index].progress?.totalUnitCount = size
  }
}
