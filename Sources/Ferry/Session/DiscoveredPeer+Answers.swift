import NIOCore
import NIOPosix

extension DiscoveredPeer {
  /// The addresses at which the peer's port accepts a TCP connection within `timeout`, tried
  /// all at once, in the order of ``addresses``; empty when none does: the machine is gone,
  /// its link is down, or nothing listens there any more — which mDNS only says once the
  /// peer's records expire, minutes later. Each connection is closed as soon as it is made
  /// (the advertiser sees one closed before its TLS handshake).
  package func answeringAddresses(within timeout: Duration) async -> [DiscoveredAddress] {
    let port = Int(self.port)
    let answered = await withTaskGroup(of: (Int, Bool).self) { tasks in
      for (index, address) in addresses.enumerated() {
        tasks.addTask {
          let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.nanoseconds(timeout.timeAmount.nanoseconds))
          guard let channel = try? await bootstrap.connect(host: address.ip, port: port).get()
          else { return (index, false) }
          channel.close(promise: nil)
          return (index, true)
        }
      }
      return await tasks.reduce(into: Set<Int>()) { if $1.1 { $0.insert($1.0) } }
    }
    return addresses.indices.filter(answered.contains).map { addresses[$0] }
  }
}
