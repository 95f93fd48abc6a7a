extension Browser {
  /// Waits until a Ferry peer (one with a fingerprint) satisfying `predicate` is found, and
  /// returns it. Consumes ``events`` while waiting.
  ///
  /// - Throws: ``DiscoveryError/browsingFailed(reason:)`` if browsing fails, or
  ///   ``DiscoveryError/stopped`` if the browser stops or `timeout` passes first.
  public func firstPeer(
    timeout: Duration = .seconds(30), where predicate: @escaping @Sendable (DiscoveredPeer) -> Bool
  ) async throws(DiscoveryError) -> DiscoveredPeer {
    if let known = peers.first(where: { $0.peerID != nil && predicate($0) }) { return known }
    let events = self.events
    do {
      return try await withThrowingTaskGroup(of: DiscoveredPeer?.self) { group in
        group.addTask {
          for try await event in events {
            if case .found(let peer) = event, peer.peerID != nil, predicate(peer) { return peer }
            if case .updated(let peer) = event, peer.peerID != nil, predicate(peer) { return peer }
          }
          return nil
        }
        group.addTask {
          try await Task.sleep(for: timeout)
          return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        guard let first else { throw DiscoveryError.stopped }
        return first
      }
    } catch let error as DiscoveryError {
      throw error
    } catch {
      throw .stopped
    }
  }
}
