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
}
