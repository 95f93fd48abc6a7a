import Synchronization

/// Consumes an async sequence in the background and keeps every element with the time it
/// arrived, so that a test can wait for a particular one and measure when it came.
final class EventRecorder<Element: Sendable>: Sendable {
  /// An element and its arrival time.
  struct Record: Sendable {
    let element: Element
    let time: ContinuousClock.Instant
  }

  private let records = Mutex<[Record]>([])
  private let finished = Mutex<(done: Bool, error: String?)>((false, nil))

  init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
    Task { [self] in
      do {
        for try await element in sequence {
          self.records.withLock { $0.append(Record(element: element, time: .now)) }
        }
        self.finished.withLock { $0 = (true, nil) }
      } catch {
        self.finished.withLock { $0 = (true, "\(error)") }
      }
    }
  }

  /// Everything received so far.
  var all: [Record] { records.withLock { $0 } }

  /// Whether the sequence ended.
  var isFinished: Bool { finished.withLock { $0.done } }

  /// The error the sequence ended with, if any.
  var failure: String? { finished.withLock { $0.error } }

  /// Waits for the first element after `index` (0: any) that satisfies `predicate`.
  func first(
    after index: Int = 0, timeout: Duration = Harness.patience, where predicate: (Element) -> Bool
  ) async -> (record: Record, index: Int)? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      let snapshot = all
      if let found = snapshot.indices.dropFirst(index).first(where: {
        predicate(snapshot[$0].element)
      }) {
        return (snapshot[found], found)
      }
      if finished.withLock({ $0.done }) { return nil }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return nil
  }
}
