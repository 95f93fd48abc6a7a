import Synchronization

/// One offer's complete files on their way into place, beside the offer's executor: handed
/// over in the order they ended and landed in that order — settled against their digests and
/// renamed under the destination — by one job at a time of ``OfferExecutor/runBeside(_:)``.
///
/// The executor keeps creating and writing the next files meanwhile; the lane settles and
/// renames the last ones. One job per offer, not several, so that on a folder of small files
/// the kernel's work of each file is split between two threads — which still meet on the
/// staging folder's lock and the folders files go into — rather than more threads queueing
/// on those locks. Each job lands every file handed over by the time it runs and gives their
/// outcomes back to the executor in one turn. Jobs of all offers share
/// ``DetachedWork/landing``'s width.
///
/// A file is not handed over — its caller lands it at once — when the process already holds
/// ``LandingBudget/atMost`` files waiting to land (each holds a descriptor), or when the lane
/// would hold more than ``bytesAtMost`` bytes of files (large files are fsync'd one after the
/// other: an offer that stops waits for the files in its lane, so their flushing stays short).
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

  /// Files waiting to land, counted in the whole process.
  let budget: LandingBudget
  /// Bytes of files the lane holds at most — handed over and not landed yet (a file larger
  /// than that still goes into a lane holding nothing): 64 MiB.
  let bytesAtMost: UInt64
  private let waiting = Mutex<(jobs: [Job], bytes: UInt64, running: Bool)>(([], 0, false))

  /// A lane drawing on `budget` (the process's), holding at most `bytesAtMost` bytes of files.
  init(budget: LandingBudget = .shared, bytesAtMost: UInt64 = 64 << 20) {
    self.budget = budget
    self.bytesAtMost = bytesAtMost
  }

  /// Lands `job` after the files handed over before it: true, and `landed` hears, on
  /// `executor`, the outcomes of the files one job landed, in order; false (nothing done) when
  /// the lane or the process holds as much as it may — the caller lands the file itself.
  func take(
    _ job: Job, executor: any OfferExecutor,
    landed: @escaping @Sendable ([(index: Int, landing: Landing)]) -> Void
  ) -> Bool {
    let size = job.file.position
    let start = waiting.withLock { waiting -> Bool? in
      // Counted until each file landed: a file of any size goes into a lane holding nothing.
      if waiting.bytes > 0, waiting.bytes + size > bytesAtMost { return nil }
      guard budget.hold() else { return nil }
      waiting.jobs.append(job)
      waiting.bytes += size
      guard !waiting.running else { return false }
      waiting.running = true
      return true
    }
    guard let start else { return false }
    if start { executor.runBeside { self.drain(executor, landed) } }
    return true
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
      let size = job.file.position
      outcomes.append((job.index, job.lander.land(job.file, digest: job.digest)))
      waiting.withLock { $0.bytes -= size }
      budget.letGo()
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

/// How many files may wait to land in a process, each holding its staged file's descriptor:
/// counted across every offer (``LandingLane``).
///
/// Any thread.
final class LandingBudget: Sendable {
  /// The process's budget.
  static let shared = LandingBudget(atMost: 128)

  /// Files waiting at most.
  let atMost: Int
  private let held = Atomic<Int>(0)

  init(atMost: Int) {
    self.atMost = atMost
  }

  /// Counts one more file waiting: false (nothing counted) when ``atMost`` already wait.
  func hold() -> Bool {
    var current = held.load(ordering: .relaxed)
    while current < atMost {
      let (exchanged, original) = held.compareExchange(
        expected: current, desired: current + 1, ordering: .relaxed)
      if exchanged { return true }
      current = original
    }
    return false
  }

  /// Counts one file waiting less: it landed.
  func letGo() {
    held.subtract(1, ordering: .relaxed)
  }
}
