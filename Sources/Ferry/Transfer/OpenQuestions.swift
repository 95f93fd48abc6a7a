import Synchronization

/// The offers of one link handed to the application and not yet let go of: answered, or
/// released after the sender withdrew them. An offer the sender withdraws while it is asked
/// about frees its channel at once, but the application still holds its file list until its
/// prompt gets to it; counting those here bounds what a sender that offers and cancels in a
/// loop can make the application hold. Thread-safe.
final class OpenQuestions: Sendable {
  /// The most questions one link may have open.
  let limit: Int
  private let count = Mutex(0)

  init(limit: Int) {
    self.limit = limit
  }

  /// Opens one question; false (nothing opened) when ``limit`` are open.
  func open() -> Bool {
    count.withLock { count in
      guard count < limit else { return false }
      count += 1
      return true
    }
  }

  /// Closes one question opened by ``open()``.
  func close() {
    count.withLock { $0 -= 1 }
  }
}
