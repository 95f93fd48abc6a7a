import Synchronization

/// The invitations an ``InvitationListener`` received and the application has not taken yet.
///
/// Unlike an unbounded `AsyncStream` buffer, a withdrawn invitation leaves the queue at once
/// (``remove(_:)``), with its context: the queue never holds more than the listener's pending
/// limit, however many invitations a peer sends and withdraws while the application is busy.
/// Thread-safe; consumers waiting in ``next()`` are served in order.
final class InvitationQueue: Sendable {
  private struct State {
    var waiting: [Invitation] = []
    var consumers: [(id: UInt64, continuation: CheckedContinuation<Invitation?, Never>)] = []
    var nextID: UInt64 = 0
    var finished = false
  }

  private let state = Mutex(State())

  /// The queue as the stream ``Advertiser/invitations`` hands out.
  var stream: AsyncStream<Invitation> {
    AsyncStream(unfolding: { [self] in await next() })
  }

  /// Queues `invitation`, or hands it to the waiting consumer. Ignored once finished.
  func push(_ invitation: Invitation) {
    let consumer = state.withLock { state -> CheckedContinuation<Invitation?, Never>? in
      guard !state.finished else { return nil }
      if !state.consumers.isEmpty { return state.consumers.removeFirst().continuation }
      state.waiting.append(invitation)
      return nil
    }
    consumer?.resume(returning: invitation)
  }

  /// Drops `invitation` if it is still queued (it was withdrawn before anyone took it).
  func remove(_ invitation: Invitation) {
    state.withLock { state in state.waiting.removeAll { $0 === invitation } }
  }

  /// Ends the stream once the queued invitations are taken.
  func finish() {
    let consumers = state.withLock { state in
      state.finished = true
      defer { state.consumers = [] }
      return state.consumers.map(\.continuation)  // only waiting when nothing is queued
    }
    for consumer in consumers { consumer.resume(returning: nil) }
  }

  /// The next invitation still pending, waiting for one; `nil` once finished and empty or when
  /// the calling task is cancelled.
  func next() async -> Invitation? {
    let id = state.withLock { state in
      defer { state.nextID += 1 }
      return state.nextID
    }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Invitation?, Never>) in
        let ready = state.withLock { state -> Invitation?? in
          if !state.waiting.isEmpty { return .some(state.waiting.removeFirst()) }
          if state.finished || Task.isCancelled { return .some(nil) }
          state.consumers.append((id, continuation))
          return .none
        }
        if let ready { continuation.resume(returning: ready) }
      }
    } onCancel: {
      let consumer = state.withLock { state in
        state.consumers.firstIndex { $0.id == id }.map { state.consumers.remove(at: $0) }
      }
      consumer?.continuation.resume(returning: nil)
    }
  }
}
