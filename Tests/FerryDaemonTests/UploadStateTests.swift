import Testing

@testable import FerryDaemon

/// A browser upload's bookkeeping: files in order, each exactly its declared size, empty
/// folders skipped, and a stall measured on the browser's turns only.
@Suite("A browser upload's state")
struct UploadStateTests {
  static let items: [UploadState.Item] = [
    .init(size: 0, folder: true), .init(size: 5, folder: false), .init(size: 0, folder: true),
    .init(size: 0, folder: false),
  ]

  @Test("it waits for the first file with bytes, then each next one; folders take none")
  func inOrder() throws {
    var state = UploadState(items: Self.items, now: 0)
    #expect(state.phase == .waiting(next: 1, since: 0))
    #expect(throws: UploadState.Refusal.noSuchFile) { try state.begin(0, length: 0, now: 1) }
    #expect(throws: UploadState.Refusal.outOfOrder(expected: 1)) {
      try state.begin(3, length: 0, now: 1)
    }
    try state.begin(1, length: 5, now: 1)
    #expect(throws: UploadState.Refusal.outOfOrder(expected: nil)) {
      try state.begin(3, length: 0, now: 1)
    }
    state.fileDone(now: 2)
    #expect(state.phase == .waiting(next: 3, since: 2))
    try state.begin(3, length: 0, now: 3)
    state.fileDone(now: 3)
    #expect(state.phase == .finished)
    #expect(throws: UploadState.Refusal.outOfOrder(expected: nil)) {
      try state.begin(1, length: 5, now: 4)
    }
  }

  @Test("a length other than the declared size, or an index out of range, is refused")
  func hostileIndexAndLength() {
    var state = UploadState(items: Self.items, now: 0)
    #expect(throws: UploadState.Refusal.wrongSize(declared: 5)) {
      try state.begin(1, length: 6, now: 1)
    }
    #expect(throws: UploadState.Refusal.wrongSize(declared: 5)) {
      try state.begin(1, length: 4, now: 1)
    }
    for index in [-1, 4, Int.max, Int.min] {
      #expect(throws: UploadState.Refusal.noSuchFile) { try state.begin(index, length: 0, now: 1) }
    }
    #expect(state.phase == .waiting(next: 1, since: 0))
  }

  @Test("an upload of empty folders only has nothing to wait for")
  func foldersOnly() {
    let state = UploadState(items: [.init(size: 0, folder: true)], now: 0)
    #expect(state.phase == .finished)
    #expect(!state.stalled(now: 1000, limit: 60))
  }

  @Test("a stall counts the browser's turns only, not the receiver's")
  func stalls() throws {
    var state = UploadState(items: Self.items, now: 0)
    #expect(!state.stalled(now: 60, limit: 60))
    #expect(state.stalled(now: 61, limit: 60))
    try state.begin(1, length: 5, now: 10)
    state.browserTurn(false, now: 10)
    // The receiver's person deciding, or a slow link: no stall, however long.
    #expect(!state.stalled(now: 10_000, limit: 60))
    state.browserTurn(true, now: 10_000)
    #expect(!state.stalled(now: 10_060, limit: 60))
    #expect(state.stalled(now: 10_061, limit: 60))
  }
}
