import Ferry

/// Where a `ferry send --localsend`'s retries stand. Each retry is a new LocalSend session — a
/// new question on a device that asks — so they are paced by the same backoff as a Ferry
/// send's (``RetryPolicy``: 1, 2, 4, 8, then 15 s, ±20 %), end when `--retry-for` passes
/// without a file delivered, and are at most ``maximumInARow`` in a row without one.
struct LocalSendRetry {
  /// The most sessions opened again in a row without a file delivered.
  static let maximumInARow = 5

  let policy: RetryPolicy
  /// The session under way (1: the first).
  private(set) var attempt = 1
  /// Sessions cut off so far.
  private(set) var cuts = 0
  /// Retries since the last progress (a file delivered), or the start.
  private var inARow = 0
  /// The last progress, or the start: what `--retry-for` counts from.
  private var progressedAt = ContinuousClock.now

  init(policy: RetryPolicy) {
    self.policy = policy
  }

  /// Whether uploads were cut off before (a busy device may still be ending that session).
  var hadCut: Bool { cuts > 0 }

  /// A file was delivered: `--retry-for` and the backoff count from now.
  mutating func progressed() {
    inARow = 0
    progressedAt = .now
  }

  /// The session was cut off mid-upload.
  mutating func cutOff() {
    cuts += 1
  }

  /// The wait before the next session, which becomes the one under way; nil when no more may
  /// be opened (`--retry-for` would pass without progress, or ``maximumInARow`` did).
  mutating func next(now: ContinuousClock.Instant = .now) -> Duration? {
    guard inARow < Self.maximumInARow else { return nil }
    let delay = policy.delay(beforeRetry: inARow + 1)
    guard now + delay - progressedAt <= policy.retryFor else { return nil }
    inARow += 1
    attempt += 1
    return delay
  }
}
