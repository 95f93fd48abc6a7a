import Dispatch
import Foundation
import NIOCore
import Synchronization
import Testing

@testable import Ferry

/// One offer's files landing beside its executor (``LandingLane``): in the order handed over,
/// every one of them, outcomes back on the executor; what the lane and the process hold at
/// most.
@Suite("The landing lane", .timeLimit(.minutes(1)))
struct LandingLaneTests {
  let sender = try! Fingerprint(bytes: (0..<32).map { UInt8($0) })

  /// `count` small files, staged whole in a fresh destination, with what landing each needs.
  func staged(_ count: Int) throws -> (URL, [LandingLane.Job]) {
    let destination = URL(fileURLWithPath: try scratchFolder("landing"))
    let staging = try StagingArea(destination: destination)
    let options = ReceiveOptions(destination: destination)
    let queue = DispatchQueue(label: "landing-test-hash")
    var jobs: [LandingLane.Job] = []
    for index in 0..<count {
      let bytes = Array("file \(index)\n".utf8)
      let file = TransferFile(
        path: "f\(index)", size: UInt64(bytes.count), modificationSeconds: 1_700_000_000,
        modificationNanoseconds: 0, permissions: 0o644, kind: .file)
      var slot = FileSlot(offered: file, path: try RelativePath(validating: file.path))
      slot.name = staging.name(for: file, from: sender)
      let staged = try StagedFile(
        slot.name, in: staging, index: index, offered: file, offset: 0, checksum: .xxh3,
        hashingOn: queue)
      try staged.write(.bytes(ByteBuffer(bytes: bytes)))
      var hasher = ContentHasher(.xxh3)
      hasher.update(contentsOf: bytes)
      jobs.append(
        LandingLane.Job(
          index: index, file: staged,
          lander: Lander(staging: staging, options: options, sender: sender.bytes, slot: slot),
          digest: hasher.finalize()))
    }
    return (destination, jobs)
  }

  @Test("files handed over land in order, each reported once, on the executor")
  func inOrder() async throws {
    let (destination, jobs) = try staged(300)
    let executor = DispatchQueue(label: "landing-test-executor")
    let key = DispatchSpecificKey<Bool>()
    executor.setSpecific(key: key, value: true)
    let budget = LandingBudget(atMost: 1000)
    let lane = LandingLane(budget: budget)
    let reported = Mutex<[Int]>([])
    let taken = Mutex(true)
    let allPlaced = Mutex(true)
    let onExecutor = Mutex(true)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      executor.async {
        for job in jobs {
          let took = lane.take(job, executor: executor) { outcomes in
            if DispatchQueue.getSpecific(key: key) == nil { onExecutor.withLock { $0 = false } }
            for (index, landing) in outcomes {
              if case .settled(.placed, _) = landing {
              } else {
                allPlaced.withLock { $0 = false }
              }
              reported.withLock { $0.append(index) }
            }
            if reported.withLock({ $0.count }) == jobs.count { done.resume() }
          }
          if !took {
            // Never expected (the budget is the test's own): landed here, so that the test
            // ends, and failed below.
            taken.withLock { $0 = false }
            _ = job.lander.land(job.file, digest: job.digest)
            reported.withLock { $0.append(job.index) }
          }
        }
      }
    }
    #expect(taken.withLock { $0 })
    #expect(allPlaced.withLock { $0 })
    #expect(onExecutor.withLock { $0 })
    #expect(reported.withLock { $0 } == Array(0..<300))
    for index in [0, 150, 299] {
      let text = try String(contentsOf: destination.appending(path: "f\(index)"), encoding: .utf8)
      #expect(text == "file \(index)\n")
    }
    // Every file counted was let go of.
    for _ in 0..<1000 { #expect(budget.hold()) }
    #expect(!budget.hold())
  }

  /// An executor that runs nothing until told: work on it and beside it wait in lists.
  final class HeldExecutor: OfferExecutor, @unchecked Sendable {
    private let state = Mutex<(on: [@Sendable () -> Void], beside: [@Sendable () -> Void])>(
      ([], []))
    func run(_ work: @escaping @Sendable () -> Void) { state.withLock { $0.on.append(work) } }
    func run(after delay: Duration, _ work: @escaping @Sendable () -> Void) { run(work) }
    func runBeside(_ work: @escaping @Sendable () -> Void) {
      state.withLock { $0.beside.append(work) }
    }
    /// Runs what waits beside, then what waits on it, until nothing is left.
    func settle() {
      while true {
        let (on, beside) = state.withLock { state in
          defer { state = ([], []) }
          return state
        }
        if on.isEmpty, beside.isEmpty { return }
        for work in beside + on { work() }
      }
    }
  }

  @Test("a full lane, or a process holding its budget, turns files away; all come out")
  func full() throws {
    let (_, jobs) = try staged(4)
    let executor = HeldExecutor()
    let landed = Mutex<[Int]>([])
    func take(_ lane: LandingLane, _ job: LandingLane.Job) -> Bool {
      lane.take(job, executor: executor) { outcomes in
        landed.withLock { $0 += outcomes.map(\.index) }
      }
    }
    // Bytes: each file is 7 or 8 bytes; a lane of 10 takes one, then none until it drained.
    let small = LandingLane(budget: LandingBudget(atMost: 100), bytesAtMost: 10)
    #expect(take(small, jobs[0]))
    #expect(!take(small, jobs[1]))
    executor.settle()
    #expect(landed.withLock { $0 } == [0])
    #expect(take(small, jobs[1]))
    // The process's count: two lanes sharing a budget of one.
    let budget = LandingBudget(atMost: 1)
    let first = LandingLane(budget: budget)
    let second = LandingLane(budget: budget)
    #expect(take(first, jobs[2]))
    #expect(!take(second, jobs[3]))
    executor.settle()
    #expect(landed.withLock { $0 } == [0, 1, 2])
    #expect(take(second, jobs[3]))
    executor.settle()
    #expect(landed.withLock { $0 } == [0, 1, 2, 3])
    #expect(budget.hold())
  }
}
