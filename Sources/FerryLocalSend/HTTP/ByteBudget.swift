import Synchronization

/// Bytes that many connections draw on together (the JSON bodies a server holds while they
/// arrive): a cap counted in all, never per connection. Thread-safe.
package final class ByteBudget: Sendable {
  package let capacity: Int
  private let used = Mutex(0)

  package init(_ capacity: Int) {
    self.capacity = capacity
  }

  /// Takes `count` bytes, unless that would pass the cap (then false, and nothing is taken).
  package func take(_ count: Int) -> Bool {
    used.withLock { used in
      guard count >= 0, used + count <= capacity else { return false }
      used += count
      return true
    }
  }

  /// Gives `count` bytes back.
  package func give(_ count: Int) {
    used.withLock { $0 = max(0, $0 - count) }
  }

  /// Bytes taken now.
  package var inUse: Int { used.withLock { $0 } }
}
