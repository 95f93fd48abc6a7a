import Synchronization

/// The application's view of a credited buffer: data that gives its sender credit back as it
/// is taken. Several iterators may wait at once; each element goes to one of them.
public struct CreditedSequence<Element: Sendable>: AsyncSequence, Sendable {
  let buffer: CreditedBuffer<Element>

  /// Iterates the elements; throws ``TransferError`` if the channel ends abnormally.
  public struct AsyncIterator: AsyncIteratorProtocol {
    let buffer: CreditedBuffer<Element>

    /// The next element, or nil at the end.
    public mutating func next() async throws -> Element? {
      try await buffer.next()
    }
  }

  /// Makes the iterator.
  public func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(buffer: buffer)
  }
}
