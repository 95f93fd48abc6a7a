import Dispatch

/// Where an offer's work runs, in order and off the event loop: a serial `DispatchQueue`, or (in
/// tests and the fuzzer, next to an `EmbeddedChannel`) the caller's own thread.
protocol OfferExecutor: Sendable {
  /// Runs `work` after what was given before.
  func run(_ work: @escaping @Sendable () -> Void)
  /// Runs `work` after `delay`.
  func run(after delay: Duration, _ work: @escaping @Sendable () -> Void)
}

extension DispatchQueue: OfferExecutor {
  func run(_ work: @escaping @Sendable () -> Void) {
    async(execute: work)
  }

  func run(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
    let nanoseconds =
      delay.components.seconds * 1_000_000_000 + delay.components.attoseconds
      / 1_000_000_000
    asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds)), execute: work)
  }
}
