import Ferry
import Synchronization

/// Prompts take turns: one question on the terminal at a time, in the order asked.
actor PromptTurns {
  private var busy = false
  private var waiting: [CheckedContinuation<Void, Never>] = []

  /// Runs `ask` when no other prompt is on screen.
  func take<T: Sendable>(_ ask: @Sendable () async -> T) async -> T {
    if busy {
      await withCheckedContinuation { waiting.append($0) }
    }
    busy = true
    let result = await ask()
    if waiting.isEmpty {
      busy = false
    } else {
      waiting.removeFirst().resume()
    }
    return result
  }
}
