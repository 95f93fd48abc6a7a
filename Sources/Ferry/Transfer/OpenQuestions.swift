import Synchronization

/// The offers of one link handed to the application and not yet let go of: answered, or
/// released after the sender withdrew them. An offer the sender withdraws while it is asked
/// about frees its channel at once, but the application still holds its file list until its
/// prompt gets to it; counting those here bounds what a sender that offers and cancels in a
/// loop can make the application hold. Thread-safe.
package final class OpenQuestions: Sendable {
  /// One open question: counted until ``close()`` (or until it is released, whichever comes
  /// first), exactly once.
  package final class Question: Sendable {
    private let questions: OpenQuestions
    private let open = Atomic<Bool>(true)

    fileprivate init(_ questions: OpenQuestions) {
      self.questions = questions
    }

    deinit {
      close()
    }

    /// Stops counting this question; later calls do nothing.
    package func close() {
      guard open.exchange(false, ordering: .acquiringAndReleasing) else { return }
      questions.count.withLock { $0 -= 1 }
    }
  }

  /// The most questions one link may have open.
  let limit: Int
  private let count = Mutex(0)

  package init(limit: Int) {
    self.limit = limit
  }

  /// How many questions are open.
  var openCount: Int { count.withLock { $0 } }

  /// Opens one question; nil (nothing opened) when ``limit`` are open.
  package func open() -> Question? {
    let opened = count.withLock { count in
      guard count < limit else { return false }
      count += 1
      return true
    }
    return opened ? Question(self) : nil
  }
}
