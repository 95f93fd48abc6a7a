import Synchronization

/// Work a service starts and leaves running — a timer, one sender's decision — until the
/// service ends and cancels what is left (``cancelAll()``). Finished work forgets itself.
/// Any thread.
final class BackgroundTasks: Sendable {
  private struct State {
    var next = 0
    var running: [Int: Task<Void, Never>] = [:]
    var cancelled = false
  }

  private let state = Mutex(State())

  /// Starts `work`; cancelled at once when ``cancelAll()`` was called before.
  func start(_ work: @escaping @Sendable () async -> Void) {
    state.withLock { state in
      let id = state.next
      state.next += 1
      let task = Task { [weak self] in
        await work()
        self?.finished(id)
      }
      if state.cancelled {
        task.cancel()
      } else {
        state.running[id] = task
      }
    }
  }

  /// Cancels everything started, and whatever is started later.
  func cancelAll() {
    let running = state.withLock { state in
      state.cancelled = true
      defer { state.running.removeAll() }
      return Array(state.running.values)
    }
    for task in running { task.cancel() }
  }

  private func finished(_ id: Int) {
    _ = state.withLock { $0.running.removeValue(forKey: id) }
  }
}
