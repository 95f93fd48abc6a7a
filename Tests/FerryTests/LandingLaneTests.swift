import Dispatch
import Foundation
import NIOCore
import Synchronization
import Testing

@testable import Ferry

/// One offer's files landing beside its executor (``LandingLane``): in the order handed over,
/// every one of them, outcomes back on the executor; and the process-wide count of files
/// waiting to land.
@Suite("The landing lane", .serialized)
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
    let lane = LandingLane()
    let reported = Mutex<[Int]>([])
    let laned = Mutex<[Int]>([])
    let allPlaced = Mutex(true)
    let onExecutor = Mutex(true)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      // On the executor: the continuation resumed once every file was reported.
      let resumed = Mutex(false)
      @Sendable func finishIfDone() {
        guard reported.withLock({ $0.count }) == jobs.count else { return }
        let first = resumed.withLock { was -> Bool in
          defer { was = true }
          return !was
        }
        if first { done.resume() }
      }
      executor.async {
        for job in jobs {
          // Counted as OfferDisk.land counts it; a full process lands at once instead.
          guard LandingLane.hold() else {
            _ = job.lander.land(job.file, digest: job.digest)
            reported.withLock { $0.append(job.index) }
            continue
          }
          lane.hand(job, executor: executor) { outcomes in
            if DispatchQueue.getSpecific(key: key) == nil { onExecutor.withLock { $0 = false } }
            for (index, landing) in outcomes {
              if case .settled(.placed, _) = landing {
              } else {
                allPlaced.withLock { $0 = false }
              }
              reported.withLock { $0.append(index) }
              laned.withLock { $0.append(index) }
            }
            finishIfDone()
          }
        }
        finishIfDone()
      }
    }
    #expect(allPlaced.withLock { $0 })
    #expect(onExecutor.withLock { $0 })
    // Each file once; those the lane landed (all of them unless other suites' offers filled
    // the process's count meanwhile) in the order handed over.
    #expect(reported.withLock { $0 }.sorted() == Array(0..<300))
    let order = laned.withLock { $0 }
    #expect(order == order.sorted())
    #expect(order.count > 0)
    for index in [0, 150, 299] {
      let text = try String(contentsOf: destination.appending(path: "f\(index)"), encoding: .utf8)
      #expect(text == "file \(index)\n")
    }
  }

  @Test("at most heldAtMost files wait to land in the whole process")
  func capped() {
    var counted = 0
    while LandingLane.hold() {
      counted += 1
      // Other suites' offers may hold some meanwhile: never more than the cap in all.
      #expect(counted <= LandingLane.heldAtMost)
    }
    #expect(!LandingLane.hold())
    for _ in 0..<counted { LandingLane.letGo() }
    #expect(LandingLane.hold())
    LandingLane.letGo()
  }
}
