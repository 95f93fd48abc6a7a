extension DiscoveredPeer {
  /// The addresses at which the peer's port accepts a TCP connection, tried all at once, in the
  /// order of ``addresses``; empty when none does within `timeout`: the machine is gone, its
  /// link is down, or nothing listens there any more — which mDNS only says once the peer's
  /// records expire, minutes later. Returns ``TCPAnswers/otherAnswersGrace`` after the first
  /// answer, or once every address has failed (``TCPAnswers/answering(_:within:)``). Any task.
  package func answeringAddresses(within timeout: Duration) async -> [DiscoveredAddress] {
    let answered = await TCPAnswers.answering(
      addresses.map { (host: $0.ip, port: Int(port)) }, within: timeout)
    return answered.map { addresses[$0] }
  }
}
