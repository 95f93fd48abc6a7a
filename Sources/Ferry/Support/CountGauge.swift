import Synchronization

/// A count of things under way (requests unanswered, downloads) that a task can wait to see
/// reach zero, without polling: ``wait(until:)`` returns when the last one ends, at its
/// deadline, or when the task is cancelled. Any thread.
package final class CountGauge: Sendable {
  private struct State {
    var count = 0
    /// Waits registered, by number.
    var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
    /// Waits released before they registered (their deadline, or a cancel, came first).
    var released = Set<Int>()
    var next = 0
  }

  private let state = Mutex(State())

  /// A count of nothing.
  package init() {}

  /// How many are under way.
  package var value: Int { state.withLock { $0.count } }

  /// One more is under way.
  package func increment() {
    state.withLock { $0.count += 1 }
  }

  /// One ended: at zero, every wait returns.
  package func decrement() {
    let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.count = max(0, state.count - 1)
      guard state.count == 0 else { return [] }
      defer { state.waiting.removeAll() }
      return Array(state.waiting.values)
    }
    for waiter in woken { waiter.resume() }
  }

  /// Returns once nothing is under way, or at `deadline` (nil: no deadline), or when the task
  /// is cancelled.
  package func wait(until deadline: ContinuousClock.Instant? = nil) async {
    let id = state.withLock { state in
      defer { state.next += 1 }
      return state.next
    }
    await withTaskGroup(of: Void.self) { group in
      group.addTask { [self] in
        await withTaskCancellationHandler {
          await untilZero(id)
        } onCancel: {
          release(id)
        }
      }
      if let deadline { group.addTask { try? await Task.sleep(until: deadline) } }
      await group.next()
      release(id)
      group.cancelAll()
    }
  }

  /// Waits (as wait `id`) until the count is zero, or the wait is released.
  private func untilZero(_ id: Int) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state -> Bool in
        guard state.count > 0, state.released.remove(id) == nil else { return true }
        state.waiting[id] = continuation
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Ends wait `id`: its deadline came, or its task was cancelled.
  private func release(_ id: Int) {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      if let waiter = state.waiting.removeValue(forKey: id) { return waiter }
      state.released.insert(id)
      return nil
    }
    waiter?.resume()
  }
}
