import Dispatch
import Testing

@testable import Ferry

/// `TransferProgress` is updated from two threads on the sending side (the send task, and the
/// event loop for each FILE_ACK): no update may be lost.
@Suite("TransferProgress")
struct TransferProgressTests {
  @Test("files completed from two threads at once all count, and the last snapshot says so")
  func concurrentUpdates() async {
    let count = 4000
    let progress = TransferProgress(
      files: (0..<count).map { (name: "f\($0)", size: UInt64(1000 + $0)) })
    let total = (0..<count).reduce(Int64(0)) { $0 + Int64(1000 + $1) }
    DispatchQueue.concurrentPerform(iterations: 2) { half in
      for index in stride(from: half, to: count, by: 2) {
        progress.advance(index, to: 500)
        _ = progress.file(index)
        progress.complete(index)
      }
    }
    progress.finish()
    #expect(progress.overall.completedUnitCount == total)
    var last: ProgressSnapshot?
    for await snapshot in progress.snapshots { last = snapshot }
    #expect(last?.filesDone == count)
    #expect(last?.bytes == total)
  }

  @Test("a file that fails midway counts what arrived, not its size: a cancel never reads 100 %")
  func failedFileIsNotDone() async {
    let progress = TransferProgress(files: [(name: "big", size: 1000), (name: "small", size: 10)])
    progress.complete(1)
    progress.advance(0, to: 270)
    progress.complete(0, failed: true)
    progress.finish()
    var last: ProgressSnapshot?
    for await snapshot in progress.snapshots { last = snapshot }
    #expect(last?.bytes == 280)
    #expect(last?.total == 1010)
    #expect(last?.filesDone == 1)
    #expect(last?.fileCount == 2)
    #expect(last?.currentFile == "big")
    #expect(last?.currentFileBytes == 270)
  }

  @Test("holes of a sparse file and a resumed prefix count as done but not in the rate")
  func uncrossedBytesAreNotRate() async throws {
    let size: UInt64 = 10_000_000_000
    let progress = TransferProgress(files: [(name: "disk.img", size: size)])
    // 9 GB of hole, no data crossed; then 1 MB of data half a second later.
    progress.advance(0, to: 9_000_000_000, uncrossed: 9_000_000_000)
    try await Task.sleep(for: .milliseconds(600))
    progress.advance(0, to: 9_001_000_000)
    try await Task.sleep(for: .milliseconds(150))
    progress.advance(0, to: 9_002_000_000)
    progress.finish()
    var rates: [Double] = []
    var last: ProgressSnapshot?
    for await snapshot in progress.snapshots {
      rates.append(snapshot.bytesPerSecond)
      last = snapshot
    }
    #expect(last?.bytes == 9_002_000_000, "the holes are done")
    #expect(rates.allSatisfy { $0 < 100_000_000 }, "no hole-sized rate: \(rates)")
    #expect(progress.bytesCrossed == 2_000_000)
  }

  @Test("a file completed without data (identical, skipped) is done, but none of it crossed")
  func completedWithoutData() {
    let progress = TransferProgress(files: [(name: "held", size: 5000), (name: "sent", size: 300)])
    progress.complete(0)
    progress.advance(1, to: 200)
    progress.complete(1)
    #expect(progress.overall.completedUnitCount == 5300)
    #expect(progress.bytesCrossed == 300)
  }

  @Test(
    "a streamed file grows with what arrives: never complete before its end, total unknown until then"
  )
  func streamedFile() async {
    let progress = TransferProgress(
      files: [(name: "known", size: 100), (name: "stdin", size: 0)], streamed: [false, true])
    progress.complete(0)
    progress.advance(1, to: 5_000_000)
    #expect(progress.totalBytes == 5_000_100)
    #expect(progress.overall.totalUnitCount > progress.overall.completedUnitCount)
    progress.advance(1, to: 7_000_000)
    progress.complete(1)
    #expect(progress.totalBytes == 7_000_100)
    #expect(progress.overall.totalUnitCount == 7_000_100)
    #expect(progress.overall.completedUnitCount == 7_000_100)
    progress.finish()
    var snapshots: [ProgressSnapshot] = []
    for await snapshot in progress.snapshots { snapshots.append(snapshot) }
    let last = snapshots.last
    #expect(last?.totalIsKnown == true)
    #expect(last?.bytes == 7_000_100 && last?.total == 7_000_100)
    #expect(last?.filesDone == 2)
  }

  @Test("snapshots of an open streamed file say the total is not known")
  func streamedSnapshot() async throws {
    let progress = TransferProgress(files: [(name: "stdin", size: 0)], streamed: [true])
    progress.advance(0, to: 3 << 20)
    progress.finish()
    var first: ProgressSnapshot?
    for await snapshot in progress.snapshots where first == nil { first = snapshot }
    let snapshot = try #require(first)
    #expect(!snapshot.totalIsKnown && !snapshot.currentFileSizeIsKnown)
    #expect(snapshot.bytes == 3 << 20 && snapshot.currentFileSize == 3 << 20)
  }
}
