/// Where a retrying send's retries stand — the one schedule every protocol's send follows
/// (``RetryPolicy``): which attempt is under way, when the policy's time without progress
/// started, and whether (and after what wait) one more attempt may come. A value, driven by
/// its send on one task; the clock is passed in.
package struct RetryLoop: Sendable {
  /// The policy it follows.
  package let policy: RetryPolicy
  /// The most attempts in a row without progress (nil: no bound but the policy's time): a
  /// protocol whose every attempt is a new question to a person bounds them.
  package let maximumWithoutProgress: Int?
  /// Attempts made so far, sending or reconnecting (the one under way included).
  package private(set) var attempt = 0
  /// The last progress, or the start.
  private var progressed: ContinuousClock.Instant
  /// What ``RetryPolicy/retryFor`` counts from: the last progress, or the end of an attempt
  /// that sent new bytes which only the next attempt can confirm (once).
  private var since: ContinuousClock.Instant
  /// Retries since the last progress, or the start.
  private var withoutProgress = 0

  /// A loop that has made no attempt yet, started at `now`.
  package init(
    policy: RetryPolicy, maximumWithoutProgress: Int? = nil, now: ContinuousClock.Instant = .now
  ) {
    self.policy = policy
    self.maximumWithoutProgress = maximumWithoutProgress
    (progressed, since) = (now, now)
  }

  /// An attempt begins (sending, or reconnecting): its number (1 for the first).
  package mutating func begin() -> Int {
    attempt += 1
    return attempt
  }

  /// The attempt that failed came to `verdict` (``SendProgress/Verdict``): progress restarts
  /// the policy's time; bytes sent but not yet confirmed earn one more attempt.
  package mutating func record(_ verdict: SendProgress.Verdict, at now: ContinuousClock.Instant) {
    switch verdict {
    case .progress:
      (progressed, since) = (now, now)
      withoutProgress = 0
    case .unconfirmed where since == progressed: since = now
    case .unconfirmed, .none: since = progressed
    case .unknown: break
    }
  }

  /// The wait before the next attempt, or nil when the policy gives up: the policy's time
  /// without progress would pass during the wait, the attempts reached their bound, or
  /// ``maximumWithoutProgress`` retries came in a row without progress.
  /// The waits grow from the policy's first (1, 2, 4, 8, then 15 s by default) and start over
  /// after progress: a receiver that came back and took more is tried again soon when it drops
  /// once more.
  package mutating func next(at now: ContinuousClock.Instant) -> Duration? {
    let delay = policy.delay(beforeRetry: withoutProgress + 1)
    guard attempt < policy.maximumAttempts, now + delay - since <= policy.retryFor,
      withoutProgress < maximumWithoutProgress ?? .max
    else { return nil }
    withoutProgress += 1
    return delay
  }

  /// How long the next attempt may take before the policy's time without progress is up
  /// (at least `floor`): what bounds a reconnection, or a device's answer.
  package func budget(at now: ContinuousClock.Instant, floor: Duration = .milliseconds(500))
    -> Duration
  {
    max(policy.retryFor - (now - since), floor)
  }
}
