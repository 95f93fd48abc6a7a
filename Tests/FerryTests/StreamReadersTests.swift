import Foundation
import Synchronization
import Testing

@testable import Ferry

/// What a second reader of a session's event streams gets: the documented contract. A
/// session's `AsyncStream`s (state changes, resource events, offers, incoming streams) and its
/// messages (CreditedBufferTests) take several readers at once, each element going to one of
/// them; a browser's events (an `AsyncThrowingStream`) take one reader at a time (a second one
/// waiting at once stops the process, that type's rule, as its doc comment says).
@Suite("A second reader of a session's event streams")
struct StreamReadersTests {
  /// What the readers saw, together.
  final class Seen: Sendable {
    let names = Mutex<[String]>([])
  }

  @Test("two readers of stateChanges at once: each change reaches exactly one, none hangs")
  func twoReaders() async throws {
    let session = try Session(identity: Identity.generate(), displayName: "two readers")
    let seen = Seen()
    let readers = (0..<2).map { _ in
      Task {
        for await change in session.stateChanges {
          seen.names.withLock { $0.append(change.peer.displayName) }
        }
      }
    }
    try await Task.sleep(for: .milliseconds(50))
    let names = (0..<20).map { "peer \($0)" }
    for name in names {
      session.report(
        try PeerID(displayName: name, fingerprint: Identity.generate().fingerprint), .connecting)
    }
    for _ in 0..<200 where seen.names.withLock({ $0.count }) < names.count {
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(seen.names.withLock { $0 }.sorted() == names.sorted())
    session.close()
    for reader in readers { _ = await reader.value }
  }
}
