import Synchronization

/// A one-shot signal: ``wait()`` returns once ``open()`` was called (at once after). Any
/// thread.
package final class Latch: Sendable {
  private enum State {
    case closed([CheckedContinuation<Void, Never>])
    case open
  }

  private let state = Mutex(State.closed([]))

  /// A closed latch.
  package init() {}

  /// Opens the latch: every wait returns.
  package func open() {
    let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      guard case .closed(let waiting) = state else { return [] }
      state = .open
      return waiting
    }
    for waiter in waiting { waiter.resume() }
  }

  /// Returns once the latch is open.
  package func wait() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let isOpen = state.withLock { state -> Bool in
        guard case .closed(var waiting) = state else { return true }
        waiting.append(continuation)
        state = .closed(waiting)
        return false
      }
      if isOpen { continuation.resume() }
    }
  }
}
