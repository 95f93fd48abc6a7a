import Synchronization

/// An async buffer whose consumption is reported back: the receiving side of a flow-controlled
/// channel. The link pushes what arrives; each element the application takes calls
/// `onConsumed`, which grants the sender credit for it. A slow consumer therefore slows the
/// sender instead of growing this buffer without bound. Several readers may wait at once, as
/// with `AsyncStream`: each element goes to one of them, the longest waiting first.
final class CreditedBuffer<Element: Sendable>: Sendable {
  private struct State {
    var elements: [Element] = []
    var head = 0
    /// Readers waiting, in the order they came, each with the number of its call.
    var waiters: [(call: UInt64, continuation: CheckedContinuation<Element?, any Error>)] = []
    var calls: UInt64 = 0
    var end: Result<Void, TransferError>?
  }

  private let state = Mutex(State())
  private let onConsumed: @Sendable (Element) -> Void

  init(onConsumed: @escaping @Sendable (Element) -> Void) {
    self.onConsumed = onConsumed
  }

  /// Adds an element (ignored after the end).
  func push(_ element: Element) {
    let waiter = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
      guard state.end == nil else { return nil }
      if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
      state.elements.append(element)
      return nil
    }
    if let waiter {
      onConsumed(element)
      waiter.resume(returning: element)
    }
  }

  /// Removes and returns what is buffered and not yet taken (nobody will read it).
  func discardBuffered() -> [Element] {
    state.withLock { state in
      defer {
        state.elements = []
        state.head = 0
      }
      return Array(state.elements[state.head...])
    }
  }

  /// Ends the sequence: cleanly, or with an error once the buffered elements are taken.
  func finish(_ end: Result<Void, TransferError> = .success(())) {
    let waiters = state.withLock { state -> [CheckedContinuation<Element?, any Error>] in
      guard state.end == nil else { return [] }
      state.end = end
      defer { state.waiters = [] }
      return state.waiters.map(\.continuation)
    }
    for waiter in waiters {
      switch end {
      case .success: waiter.resume(returning: nil)
      case .failure(let error): waiter.resume(throwing: error)
      }
    }
  }

  /// The next element, nil at a clean end; throws the error the sequence ended with.
  func next() async throws -> Element? {
    let call = state.withLock { state in
      state.calls += 1
      return state.calls
    }
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let outcome = state.withLock { state -> Result<Element?, TransferError>? in
          if state.head < state.elements.count {
            let element = state.elements[state.head]
            state.head += 1
            if state.head > 64 && state.head * 2 > state.elements.count {
              state.elements.removeFirst(state.head)
              state.head = 0
            }
            return .success(element)
          }
          switch state.end {
          case .success?: return .success(nil)
          case .failure(let error)?: return .failure(error)
          case nil:
            // Cancelled before it could wait (the handler found nothing to cancel): not kept.
            if Task.isCancelled { return .failure(.cancelled) }
            state.waiters.append((call, continuation))
            return nil
          }
        }
        switch outcome {
        case .success(let element)?:
          if let element { onConsumed(element) }
          continuation.resume(returning: element)
        case .failure(.cancelled)? where Task.isCancelled:
          continuation.resume(throwing: CancellationError())
        case .failure(let error)?:
          continuation.resume(throwing: error)
        case nil:
          break
        }
      }
    } onCancel: {
      // This reader's wait only: the others keep theirs.
      let waiter = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
        guard let index = state.waiters.firstIndex(where: { $0.call == call }) else { return nil }
        return state.waiters.remove(at: index).continuation
      }
      waiter?.resume(throwing: CancellationError())
    }
  }
}
