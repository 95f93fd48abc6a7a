import Ferry
import Synchronization

/// Prompts take turns: one question on the terminal at a time, in the order asked — except
/// that questions about offers from senders already accepted go before invitations (their
/// transfer is waiting on them). A question whose asker gave up while it waited leaves the
/// queue within 0.2 s, so that what it holds (an invitation and its context) is freed.
actor PromptTurns {
  private struct Waiter {
    let urgent: Bool
    let isPending: @Sendable () -> Bool
    let continuation: CheckedContinuation<Bool, Never>
  }

  private var busy = false
  private var waiting: [Waiter] = []
  private var sweeping = false

  /// Runs `ask` when no other prompt is on screen; nil, without asking, if `isPending` turned
  /// false while it waited. `urgent` questions (offers) go before the others.
  func take<T: Sendable>(
    urgent: Bool = false, isPending: @escaping @Sendable () -> Bool = { true },
    _ ask: @Sendable () async -> T
  ) async -> T? {
    if busy {
      let turn = await withCheckedContinuation { continuation in
        let waiter = Waiter(urgent: urgent, isPending: isPending, continuation: continuation)
        let index =
          urgent ? (waiting.firstIndex { !$0.urgent } ?? waiting.endIndex) : waiting.endIndex
        waiting.insert(waiter, at: index)
        startSweeping()
      }
      guard turn else { return nil }
    }
    busy = true
    let result = await ask()
    handOver()
    return result
  }

  /// Gives the terminal to the next waiter still pending.
  private func handOver() {
    while !waiting.isEmpty {
      let next = waiting.removeFirst()
      if next.isPending() {
        next.continuation.resume(returning: true)
        return
      }
      next.continuation.resume(returning: false)
    }
    busy = false
  }

  /// Every 0.2 s while some wait: lets withdrawn waiters go.
  private func startSweeping() {
    guard !sweeping else { return }
    sweeping = true
    Task {
      while sweep() {
        try? await Task.sleep(for: .milliseconds(200))
      }
    }
  }

  /// Releases the withdrawn waiters; false once nobody waits (the sweeping stops).
  private func sweep() -> Bool {
    var kept: [Waiter] = []
    for waiter in waiting {
      if waiter.isPending() {
        kept.append(waiter)
      } else {
        waiter.continuation.resume(returning: false)
      }
    }
    waiting = kept
    if waiting.isEmpty { sweeping = false }
    return !waiting.isEmpty
  }
}
