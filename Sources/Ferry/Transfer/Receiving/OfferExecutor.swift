import Dispatch
import Foundation
import Synchronization

/// Where an offer's work runs, in order and off the event loop: a serial `DispatchQueue`, or (in
/// tests and the fuzzer, next to an `EmbeddedChannel`) the caller's own thread.
package protocol OfferExecutor: Sendable {
  /// Runs `work` after what was given before.
  func run(_ work: @escaping @Sendable () -> Void)
  /// Runs `work` after `delay`.
  func run(after delay: Duration, _ work: @escaping @Sendable () -> Void)
  /// Runs long `work` (hashing a held file) outside this executor's order, so that the offer's
  /// frames and timers do not wait for it; `work` hands its result back with ``run(_:)``.
  func runDetached(_ work: @escaping @Sendable () -> Void)
  /// Runs disk work of the offer's complete files (settling and placing them:
  /// ``LandingLane``) beside this executor; `work` hands its results back with ``run(_:)``.
  func runBeside(_ work: @escaping @Sendable () -> Void)
}

extension OfferExecutor {
  /// An executor of the caller's own thread runs detached work as it runs delayed work: later,
  /// on that thread.
  package func runDetached(_ work: @escaping @Sendable () -> Void) {
    run(after: .zero, work)
  }

  /// An executor of the caller's own thread runs work beside it as it runs delayed work.
  package func runBeside(_ work: @escaping @Sendable () -> Void) {
    run(after: .zero, work)
  }
}

extension DispatchQueue: OfferExecutor {
  package func run(_ work: @escaping @Sendable () -> Void) {
    async(execute: work)
  }

  package func run(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
    let nanoseconds =
      delay.components.seconds * 1_000_000_000 + delay.components.attoseconds
      / 1_000_000_000
    asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds)), execute: work)
  }

  /// On ``DetachedWork/shared``: at most ``DetachedWork/width`` such jobs at once in the process.
  package func runDetached(_ work: @escaping @Sendable () -> Void) {
    DetachedWork.shared.submit(work)
  }

  /// On ``DetachedWork/landing``: at most as many offers' files land at once in the process as
  /// it has processors (two at least).
  package func runBeside(_ work: @escaping @Sendable () -> Void) {
    DetachedWork.landing.submit(work)
  }
}

/// The long work of every incoming offer in the process (hashing held files), at most
/// ``width`` jobs at once and the rest waiting in the order given: however many offers peers
/// open, this side hashes on that many threads at most.
final class DetachedWork: Sendable {
  static let shared = DetachedWork(width: 2)
  /// Where files land (``OfferExecutor/runBeside(_:)``, a ``LandingLane``'s jobs): apart from
  /// the long hashing.
  static let landing = DetachedWork(width: max(2, ProcessInfo.processInfo.activeProcessorCount))

  /// Jobs running at once.
  let width: Int
  private let state = Mutex(State())

  private struct State {
    var running = 0
    var waiting: [@Sendable () -> Void] = []
  }

  init(width: Int) {
    self.width = max(1, width)
  }

  /// Runs `work` on a global queue now, or once one of the jobs running ends.
  func submit(_ work: @escaping @Sendable () -> Void) {
    let now = state.withLock { state -> Bool in
      guard state.running < width else {
        state.waiting.append(work)
        return false
      }
      state.running += 1
      return true
    }
    if now { launch(work) }
  }

  private func launch(_ work: @escaping @Sendable () -> Void) {
    DispatchQueue.global().async {
      work()
      let next = self.state.withLock { state -> (@Sendable () -> Void)? in
        guard !state.waiting.isEmpty else {
          state.running -= 1
          return nil
        }
        return state.waiting.removeFirst()
      }
      if let next { self.launch(next) }
    }
  }
}
