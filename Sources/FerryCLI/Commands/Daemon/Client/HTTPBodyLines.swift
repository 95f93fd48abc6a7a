import Foundation
import OpenAPIRuntime

/// A response body read as lines (NDJSON): bytes split on `\n`, each line decoded as UTF-8
/// (invalid bytes replaced), at most 1 MiB a line (a longer one ends the stream with an error).
struct HTTPBodyLines: AsyncSequence {
  typealias Element = String
  let body: HTTPBody

  init(_ body: HTTPBody) { self.body = body }

  struct TooLong: Error, CustomStringConvertible {
    var description: String { "a line of the stream is longer than 1 MiB" }
  }

  func makeAsyncIterator() -> AsyncThrowingStream<String, any Error>.AsyncIterator {
    let body = self.body
    return AsyncThrowingStream<String, any Error> { continuation in
      let task = Task {
        var pending: [UInt8] = []
        do {
          for try await chunk in body {
            pending += chunk
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
              continuation.yield(String(decoding: pending[..<newline], as: UTF8.self))
              pending.removeSubrange(...newline)
            }
            if pending.count > 1 << 20 { throw TooLong() }
          }
          if !pending.isEmpty { continuation.yield(String(decoding: pending, as: UTF8.self)) }
          continuation.finish()
        } catch {
          continuation.finish(throwing: error)
        }
      }
      continuation.onTermination = { _ in task.cancel() }
    }.makeAsyncIterator()
  }
}
