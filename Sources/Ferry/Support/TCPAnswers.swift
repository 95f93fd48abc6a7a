import NIOCore
import NIOPosix

/// Which of several endpoints accept a TCP connection now: how a peer listed by mDNS, or
/// remembered from an earlier connection, is told from one that is gone before anyone is
/// invited.
package enum TCPAnswers {
  /// How long, after the first endpoint answers, the others have to answer too.
  package static let otherAnswersGrace: Duration = .milliseconds(200)

  /// The indices of `endpoints` that accept a TCP connection, tried all at once, in order;
  /// empty when none does within `timeout`. Returns ``otherAnswersGrace`` after the first
  /// answer (an endpoint that is filtered or stale costs nothing then), or once every one has
  /// failed. Each connection is closed as soon as it is made (the listener sees one closed
  /// before its TLS handshake). Host names are resolved by the system resolver. Any task.
  package static func answering(
    _ endpoints: [(host: String, port: Int)], within timeout: Duration
  ) async -> [Int] {
    guard !endpoints.isEmpty else { return [] }
    // Index -1: the grace after the first answer is over.
    let (results, sink) = AsyncStream.makeStream(of: (index: Int, answered: Bool).self)
    // Unstructured: a connect still waiting when the answer is known is not waited for (it
    // ends by its own timeout, and closes what it made).
    for (index, endpoint) in endpoints.enumerated() {
      Task {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
          .connectTimeout(.nanoseconds(timeout.timeAmount.nanoseconds))
        let channel = try? await bootstrap.connect(host: endpoint.host, port: endpoint.port).get()
        channel?.close(promise: nil)
        sink.yield((index, channel != nil))
      }
    }
    var answered = Set<Int>()
    var heard = 0
    for await result in results {
      guard result.index >= 0 else { break }
      heard += 1
      if result.answered, answered.insert(result.index).inserted, answered.count == 1 {
        Task {
          try? await Task.sleep(for: otherAnswersGrace)
          sink.yield((-1, false))
        }
      }
      if heard == endpoints.count { break }
    }
    sink.finish()
    return endpoints.indices.filter(answered.contains)
  }
}
