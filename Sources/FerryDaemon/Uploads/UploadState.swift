/// Where one browser upload (``BrowserUploads``) stands: which file's bytes it waits for, or
/// which it is writing and whose turn it is — the browser's (its bytes have not come) or the
/// receiver's (the pipe is full, or its reader has not opened it yet). A stall is measured on
/// the browser's turns only: a receiver's person deciding, or a slow link, is the send's own
/// business, with deadlines of its own. Pure: any thread.
struct UploadState: Sendable, Equatable {
  /// One entry of the upload: a file whose bytes come, or an empty folder (no bytes).
  struct Item: Sendable, Equatable {
    let size: UInt64
    let folder: Bool
  }

  /// What it does.
  enum Phase: Sendable, Equatable {
    /// Waiting for file `next`'s bytes to start coming, since `since` (seconds on a clock).
    case waiting(next: Int, since: Double)
    /// Writing file `index`: waiting for the browser's next bytes since `since`, or (nil) for
    /// the receiver to take what came.
    case writing(index: Int, browserSince: Double?)
    /// Every file was written.
    case finished
  }

  /// Why a file's bytes may not be written now.
  enum Refusal: Error, Sendable, Equatable {
    /// Not a file of this upload (past its end, or an empty folder).
    case noSuchFile
    /// Another file is due first (or is being written).
    case outOfOrder(expected: Int?)
    /// Its length is not the size declared.
    case wrongSize(declared: UInt64)
  }

  let items: [Item]
  private(set) var phase: Phase

  /// A new upload of `items`, at `now`: waiting for its first file (or finished, when it has
  /// only empty folders).
  init(items: [Item], now: Double) {
    self.items = items
    phase = .finished
    phase = next(after: -1, now: now)
  }

  /// The phase after file `index`: the next file that has bytes, or finished.
  private func next(after index: Int, now: Double) -> Phase {
    var next = index + 1
    while next < items.count, items[next].folder { next += 1 }
    return next < items.count ? .waiting(next: next, since: now) : .finished
  }

  /// File `index`'s bytes, `length` of them, begin to come at `now`.
  mutating func begin(_ index: Int, length: UInt64, now: Double) throws(Refusal) {
    guard items.indices.contains(index), !items[index].folder else { throw .noSuchFile }
    guard case .waiting(let next, _) = phase, next == index else {
      if case .waiting(let next, _) = phase { throw .outOfOrder(expected: next) }
      throw .outOfOrder(expected: nil)
    }
    guard items[index].size == length else { throw .wrongSize(declared: items[index].size) }
    phase = .writing(index: index, browserSince: now)
  }

  /// The browser's bytes came (false), or are asked for again (true), at `now`.
  mutating func browserTurn(_ waiting: Bool, now: Double) {
    guard case .writing(let index, _) = phase else { return }
    phase = .writing(index: index, browserSince: waiting ? now : nil)
  }

  /// The file being written was written whole, at `now`.
  mutating func fileDone(now: Double) {
    guard case .writing(let index, _) = phase else { return }
    phase = next(after: index, now: now)
  }

  /// Whether the browser has kept the upload waiting longer than `limit` seconds at `now`.
  func stalled(now: Double, limit: Double) -> Bool {
    switch phase {
    case .waiting(_, let since), .writing(_, let since?): now - since > limit
    case .writing(_, nil), .finished: false
    }
  }
}
