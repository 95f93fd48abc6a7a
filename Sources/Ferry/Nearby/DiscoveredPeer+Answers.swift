import NIOCore
import NIOPosix

extension DiscoveredPeer {
  /// How long, after the first address answers, the others have to answer too.
  static let otherAnswersGrace: Duration = .milliseconds(200)

  /// The addresses at which the peer's port accepts a TCP connection, tried all at once, in the
  /// order of ``addresses``; empty when none does within `timeout`: the machine is gone, its
  /// link is down, or nothing listens there any more — which mDNS only says once the peer's
  /// records expire, minutes later. Returns ``otherAnswersGrace`` after the first answer (an
  /// address that is filtered or stale costs nothing then), or once every address has failed.
  /// Each connection is closed as soon as it is made (the advertiser sees one closed before
  /// its TLS handshake). Any task.
  package func answeringAddresses(within timeout: Duration) async -> [DiscoveredAddress] {
    guard !addresses.isEmpty else { return [] }
    let port = Int(self.port)
    // Index -1: the grace after the first answer is over.
    let (results, sink) = AsyncStream.makeStream(of: (index: Int, answered: Bool).self)
    // Unstructured: a connect still waiting when the answer is known is not waited for (it
    // ends by its own timeout, and closes what it made).
    for (index, address) in addresses.enumerated() {
      Task {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
          .connectTimeout(.nanoseconds(timeout.timeAmount.nanoseconds))
        let channel = try? await bootstrap.connect(host: address.ip, port: port).get()
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
          try? await Task.sleep(for: Self.otherAnswersGrace)
          sink.yield((-1, false))
        }
      }
      if heard == addresses.count { break }
    }
    sink.finish()
    return addresses.indices.filter(answered.contains).map { addresses[$0] }
  }
}
