import Ferry
import Synchronization

/// Wakes a decision waiting for the part of a batch before it to be reported ended: an offer
/// and the end of the part before it come on two streams (the session's offers and its
/// events), so the next part may be offered before the last one's end is known here. The
/// receiver signals once both the budget (``Approvals``) and `--once`'s gate know the end.
/// Any thread.
final class PartEndSignal: Sendable {
  private let waiting = Mutex<[Fingerprint: [CheckedContinuation<Void, Never>]]>([:])

  /// A part from `sender` ended (or its batch did): every wait for it returns.
  func signal(_ sender: Fingerprint) {
    let woken = waiting.withLock { $0.removeValue(forKey: sender) } ?? []
    for waiter in woken { waiter.resume() }
  }

  /// Waits while `stillReceiving()` says a part from `sender` is being received, at most
  /// until `deadline` (or until the task is cancelled).
  func wait(
    for sender: Fingerprint, until deadline: ContinuousClock.Instant,
    while stillReceiving: @escaping @Sendable () -> Bool
  ) async {
    // A cancelled task's sleep ends at once: it stops waiting rather than spin to the deadline.
    while !Task.isCancelled, stillReceiving(), ContinuousClock.now < deadline {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { [self] in
          await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = waiting.withLock { waiting -> Bool in
              // Checked under the lock: a signal between the check and the wait is not lost.
              guard stillReceiving() else { return true }
              waiting[sender, default: []].append(continuation)
              return false
            }
            if now { continuation.resume() }
          }
        }
        group.addTask { try? await Task.sleep(until: deadline) }
        await group.next()
        group.cancelAll()
        // The sleeper ends on cancel; the waiter ends at the next signal, or here.
        signal(sender)
      }
    }
  }
}
