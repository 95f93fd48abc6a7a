import Ferry
import Synchronization

/// Gives memory back to the system once the daemon's work has settled: each
/// ``workEnded()`` (a transfer or a delivery ended) schedules one trim 2 s later, which the
/// next end pushes back. A daemon idle after a burst of transfers otherwise keeps their freed
/// buffers resident. Any thread.
final class IdleTrim: Sendable {
  private let pending = Mutex<Task<Void, Never>?>(nil)

  /// A piece of work ended: the allocator is trimmed when none has ended for 2 s.
  func workEnded() {
    let task = Task.detached(priority: .background) {
      try? await Task.sleep(for: .seconds(2))
      guard !Task.isCancelled else { return }
      AllocatorTuning.trim()
    }
    pending.withLock { pending in
      pending?.cancel()
      pending = task
    }
  }
}
