import Synchronization

/// One offer's complete files on their way into place, beside the offer's executor: handed
/// over in the order they ended and landed in that order — settled against their digests and
/// renamed under the destination — by one job at a time of ``OfferExecutor/runBeside(_:)``.
///
/// The executor keeps creating and writing the next files meanwhile; the lane renames the last
/// ones. One job per offer, not several, so that the two threads meet on the staging folder's
/// lock and no more: on a folder of small files this splits the kernel's work of one file
/// between two cores instead of adding a third party to its locks. Each job lands every file
/// handed over by the time it runs and gives their outcomes back to the executor in one turn.
/// Jobs of all offers share ``DetachedWork/landing``'s width.
///
/// Any thread: the hand-over is under a lock; a file handed over is the lane's alone.
final class LandingLane: Sendable {
  typealias Landing = IncomingOfferStateMachine.Landing

  /// A file to land: its staged file (forgotten by the executor, which no longer touches it),
  /// what placing it needs, and the digest its end came with.
  struct Job: @unchecked Sendable {
    let index: Int
    let file: StagedFile
    let lander: Lander
    let digest: [UInt8]?
  }

  /// Files handed over, not landed yet, in the whole process: each holds a descriptor open.
  static let heldAtMost = 128
  private static let held = Atomic<Int>(0)

  private let waiting = Mutex<(jobs: [Job], running: Bool)>(([], false))

  /// Counts one more file handed over in the process: false (nothing counted) when
  /// ``heldAtMost`` are already waiting to land — the caller lands its file itself.
  static func hold() -> Bool {
    var current = held.load(ordering: .relaxed)
    while current < heldAtMost {
      let (exchanged, original) = held.compareExchange(
        expected: current, desired: current + 1, ordering: .relaxed)
      if exchanged { return true }
      current = original
    }
    return false
  }

  /// Counts one file handed over less: it landed (or, in tests, was never handed over).
  static func letGo() {
    held.subtract(1, ordering: .relaxed)
  }

  /// Lands `job` after the files handed over before it; `landed` hears, on `executor`, the
  /// outcomes of the files one job landed, in order. The caller counted it (``hold()``).
  func hand(
    _ job: Job, executor: any OfferExecutor,
    landed: @escaping @Sendable ([(index: Int, landing: Landing)]) -> Void
  ) {
    let start = waiting.withLock { waiting -> Bool in
      waiting.jobs.append(job)
      guard !waiting.running else { return false }
      waiting.running = true
      return true
    }
    if start { executor.runBeside { self.drain(executor, landed) } }
  }

  /// Lands what was handed over by now and gives back their outcomes; files handed over
  /// meanwhile are a job of their own, queued behind other offers' (so that one long offer
  /// never keeps the others' files from landing).
  private func drain(
    _ executor: any OfferExecutor,
    _ landed: @escaping @Sendable ([(index: Int, landing: Landing)]) -> Void
  ) {
    let jobs = waiting.withLock { waiting -> [Job] in
      defer { waiting.jobs = [] }
      return waiting.jobs
    }
    var outcomes: [(index: Int, landing: Landing)] = []
    outcomes.reserveCapacity(jobs.count)
    for job in jobs {
      outcomes.append((job.index, job.lander.land(job.file, digest: job.digest)))
      Self.letGo()
    }
    let landings = outcomes
    executor.run { landed(landings) }
    let more = waiting.withLock { waiting -> Bool in
      waiting.running = !waiting.jobs.isEmpty
      return waiting.running
    }
    if more { executor.runBeside { self.drain(executor, landed) } }
  }
}
