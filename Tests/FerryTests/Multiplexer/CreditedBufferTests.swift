import Synchronization
import Testing

@testable import Ferry

/// A credited buffer (what `Session.messages` and a stream's chunks read from) with more than
/// one reader: every element goes to exactly one of them, none hangs, each is credited once.
@Suite("CreditedBuffer: several readers")
struct CreditedBufferTests {
  @Test("two readers waiting at once share the elements, each once, and both end")
  func twoReaders() async throws {
    let credited = Mutex(0)
    let buffer = CreditedBuffer<Int> { _ in credited.withLock { $0 += 1 } }
    let readers = (0..<2).map { _ in
      Task {
        var got: [Int] = []
        while let element = try await buffer.next() { got.append(element) }
        return got
      }
    }
    // Both are waiting before anything arrives: the case that used to hang the first one.
    try await Task.sleep(for: .milliseconds(50))
    for element in 0..<100 { buffer.push(element) }
    buffer.finish()
    let first = try await readers[0].value
    let second = try await readers[1].value
    #expect((first + second).sorted() == Array(0..<100))
    #expect(credited.withLock { $0 } == 100)
  }

  @Test("cancelling one waiting reader leaves the other's wait alone")
  func cancelOne() async throws {
    let buffer = CreditedBuffer<Int> { _ in }
    let cancelled = Task { try await buffer.next() }
    let kept = Task { try await buffer.next() }
    try await Task.sleep(for: .milliseconds(50))
    cancelled.cancel()
    await #expect(throws: CancellationError.self) { try await cancelled.value }
    buffer.push(7)
    #expect(try await kept.value == 7)
  }
}
