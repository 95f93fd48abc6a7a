import Synchronization

/// When a link last heard from its peer, on the monotonic clock, readable from any thread: the
/// connection handler records each frame, and the session asks whether the link is alive
/// before it settles two links to one peer.
final class LinkActivity: Sendable {
  private let lastHeard = Atomic<Int64>(0)
  private let origin = ContinuousClock.now

  /// The peer sent something now. On the link's event loop.
  func heard() {
    lastHeard.store(Self.nanoseconds(ContinuousClock.now - origin), ordering: .relaxed)
  }

  /// Whether the peer sent something within `interval`. Any thread.
  func heard(within interval: Duration) -> Bool {
    let since = Self.nanoseconds(ContinuousClock.now - origin) - lastHeard.load(ordering: .relaxed)
    return since <= Self.nanoseconds(interval)
  }

  private static func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
  }
}
