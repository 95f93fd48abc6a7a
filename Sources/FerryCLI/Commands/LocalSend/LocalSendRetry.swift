/// Where a `ferry send --localsend`'s retries stand: attempts, cuts, and the backoff of
/// failures in a row (1, 2, 4, then every 5 s; back to 1 s after an attempt that got through).
struct LocalSendRetry {
  /// How many sessions cut off are offered again at most.
  static let maximumCuts = 20

  /// The attempt under way (1: the first).
  private(set) var attempt = 1
  /// Sessions cut off so far.
  private(set) var cuts = 0
  /// Failures in a row, before an attempt got through.
  private var failures = 0

  /// Whether uploads were cut off before (a busy device may still be ending that session).
  var hadCut: Bool { cuts > 0 }

  /// An attempt failed before anything was sent: the next one, and how many seconds to wait.
  mutating func failed() -> Int {
    attempt += 1
    failures += 1
    return min(5, 1 << min(failures - 1, 3))
  }

  /// An attempt got through and some uploads were cut off: the next one, in 1 s.
  mutating func cutOff() {
    attempt += 1
    cuts += 1
    failures = 0
  }
}
