import Dispatch
import Foundation
import Synchronization

/// Standard input as lines, read by one thread for the whole process, so that a prompt can wait
/// for an answer with a timeout and a later prompt never loses its answer to a reader left over
/// from an earlier one.
final class TerminalInput: Sendable {
  static let shared = TerminalInput()

  private struct State {
    var started = false
    var lines: [String] = []
    var closed = false
    var waiter: (id: Int, continuation: CheckedContinuation<String?, Never>)?
    var nextID = 0
  }

  private let state = Mutex(State())

  /// The next line typed after this call (earlier input is discarded), or nil at end of input
  /// or after `timeout`.
  func nextLine(timeout: Duration) async -> String? {
    startIfNeeded()
    return await withCheckedContinuation { continuation in
      let (id, immediate) = state.withLock { state -> (Int, Bool) in
        state.lines = []
        state.nextID += 1
        if state.closed { return (state.nextID, true) }
        state.waiter = (state.nextID, continuation)
        return (state.nextID, false)
      }
      if immediate {
        continuation.resume(returning: nil)
        return
      }
      let seconds =
        Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
      DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) {
        let expired = self.state.withLock { state -> CheckedContinuation<String?, Never>? in
          guard let waiter = state.waiter, waiter.id == id else { return nil }
          state.waiter = nil
          return waiter.continuation
        }
        expired?.resume(returning: nil)
      }
    }
  }

  private func startIfNeeded() {
    let start = state.withLock { state in
      defer { state.started = true }
      return !state.started
    }
    guard start else { return }
    Thread.detachNewThread {
      while true {
        let line = Swift.readLine()
        let waiter = self.state.withLock { state -> CheckedContinuation<String?, Never>? in
          if line == nil { state.closed = true }
          guard let waiter = state.waiter else {
            if let line { state.lines.append(line) }
            return nil
          }
          state.waiter = nil
          return waiter.continuation
        }
        waiter?.resume(returning: line)
        if line == nil { return }
      }
    }
  }
}
