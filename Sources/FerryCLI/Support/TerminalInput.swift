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

  /// Whether `answer` to a `[y/N]` question is yes (`y` or `yes`, any case); anything else,
  /// including no answer, is no.
  static func isYes(_ answer: String?) -> Bool {
    answer.flatMap(verdict) ?? false
  }

  /// What `answer` to a `[y/N]` question says: true for `y`/`yes`, false for `n`/`no` or Enter
  /// alone (the default), nil for anything else (ask again). Case, surrounding spaces and
  /// control characters (a stray Ctrl-L) are ignored.
  static func verdict(_ answer: String) -> Bool? {
    let scalars = answer.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }
    let text = String(String.UnicodeScalarView(scalars)).trimmingCharacters(in: .whitespaces)
      .lowercased()
    switch text {
    case "y", "yes": return true
    case "", "n", "no": return false
    default: return nil
    }
  }

  /// How often ``nextLine(asking:timeout:giveUpWhen:)`` asks whether to give up.
  private static let pollInterval = 0.2

  /// Asks (`ask` shows the question) and returns the next line typed after it, or nil at end
  /// of input, after `timeout`, or once `giveUpWhen` returns true (asked every 0.2 s). What was
  /// typed before — on a terminal also a line not yet ended — is discarded *before* the
  /// question shows: keys pressed while nothing was asked never glue onto the answer, and an
  /// answer typed the moment the question appears is kept.
  func nextLine(
    asking ask: () -> Void, timeout: Duration,
    giveUpWhen: @escaping @Sendable () -> Bool = { false }
  ) async -> String? {
    if isatty(STDIN_FILENO) == 1 { tcflush(STDIN_FILENO, TCIFLUSH) }
    state.withLock { $0.lines = [] }
    ask()
    startIfNeeded()
    return await withCheckedContinuation { continuation in
      let (id, ready) = state.withLock { state -> (Int, String??) in
        state.nextID += 1
        if !state.lines.isEmpty { return (state.nextID, .some(state.lines.removeFirst())) }
        if state.closed { return (state.nextID, .some(nil)) }
        state.waiter = (state.nextID, continuation)
        return (state.nextID, nil)
      }
      if let ready {
        continuation.resume(returning: ready)
        return
      }
      giveUp(id, at: .now() + max(0, timeout.inSeconds), when: giveUpWhen)
    }
  }

  /// Ends wait `id` with nil at `deadline`, or earlier when `condition` holds.
  private func giveUp(
    _ id: Int, at deadline: DispatchTime, when condition: @escaping @Sendable () -> Bool
  ) {
    let next = min(deadline, .now() + Self.pollInterval)
    DispatchQueue.global().asyncAfter(deadline: next) {
      let stop = next >= deadline || condition()
      let step = self.state.withLock { state -> GiveUpStep in
        guard let waiter = state.waiter, waiter.id == id else { return .answered }
        guard stop else { return .keepWaiting }
        state.waiter = nil
        return .end(waiter.continuation)
      }
      switch step {
      case .answered: break
      case .keepWaiting: self.giveUp(id, at: deadline, when: condition)
      case .end(let continuation): continuation.resume(returning: nil)
      }
    }
  }

  private enum GiveUpStep {
    case answered, keepWaiting
    case end(CheckedContinuation<String?, Never>)
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
