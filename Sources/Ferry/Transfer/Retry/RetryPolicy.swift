/// When a send that lost its receiver tries again: how long it keeps trying without progress,
/// and how long it waits between attempts (exponential backoff with jitter). What is never
/// retried is decided by ``isRetryable(_:)-(TransferError)`` and
/// ``isRetryable(_:)-(InvitationError)``: only a dropped, unreachable or stalled link is, never a
/// refusal, a cancel or an authentication failure.
public struct RetryPolicy: Sendable, Hashable {
  /// How long to keep trying after the last progress — bytes this sender sent that the
  /// receiver confirmed holding (resuming from them in a later attempt, or storing their
  /// file), at least 1 MiB (or a 1 024th of the offer, when that is more) beyond the most
  /// confirmed before; what a receiver claims beyond what was sent to it never counts. Bytes
  /// sent but not yet confirmed earn one more attempt. Zero never retries.
  public var retryFor: Duration
  /// The wait before the first retry; each next one doubles it.
  public var firstDelay: Duration
  /// The longest wait between two attempts.
  public var maximumDelay: Duration
  /// The fraction of each wait drawn at random (0.2: ±20 %), so that senders that lost the same
  /// receiver do not all come back at once.
  public var jitter: Double
  /// The most attempts in all (sending, or reconnecting), however they end: 1 000 by default.
  /// Progress already has a bound (the offer's size); this one holds even for a receiver that
  /// confirms a little more each time.
  public var maximumAttempts: Int = 1_000

  /// A policy: by default 60 s without progress, waits of 1, 2, 4, 8 then 15 s, ±20 %.
  public init(
    retryFor: Duration = .seconds(60), firstDelay: Duration = .seconds(1),
    maximumDelay: Duration = .seconds(15), jitter: Double = 0.2
  ) {
    self.retryFor = retryFor
    self.firstDelay = firstDelay
    self.maximumDelay = maximumDelay
    self.jitter = min(max(jitter, 0), 1)
  }

  /// Never retries.
  public static let never = RetryPolicy(retryFor: .zero)

  /// The wait before retry number `attempt` (1 for the first), `random` in 0...1 drawing the
  /// jitter.
  public func delay(beforeRetry attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration
  {
    let doublings = min(max(attempt - 1, 0), 30)
    var base = firstDelay
    for _ in 0..<doublings where base < maximumDelay { base = base * 2 }
    base = min(base, maximumDelay)
    let factor = 1 + jitter * (2 * min(max(random, 0), 1) - 1)
    return base * factor
  }

  /// Whether a transfer that failed with `error` may be tried again: a link that dropped or
  /// stalled, yes; a cancel (by either side), a refusal or a file error, no.
  public static func isRetryable(_ error: TransferError) -> Bool {
    switch error {
    case .peerDisconnected, .stalled, .notConnected: true
    default: false
    }
  }

  /// Whether an invitation that failed with `error` may be tried again: no answer, no route, a
  /// connection that broke or a busy receiver, yes; a decline, an authentication failure, a
  /// protocol mismatch or a cancel, no.
  public static func isRetryable(_ error: InvitationError) -> Bool {
    switch error {
    case .timedOut, .unreachable, .connectionFailed, .busy, .expired: true
    default: false
    }
  }
}
