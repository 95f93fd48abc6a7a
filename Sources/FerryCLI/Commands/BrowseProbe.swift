import Ferry
import Synchronization

/// `ferry browse`'s check that the receivers it lists still answer: mDNS lists a receiver whose
/// machine or link went until its records expire (minutes), so every ``interval`` each listed
/// Ferry peer's port is tried (a TCP connect at all its addresses at once, ``timeout`` each).
/// One that answers at none of them ``misses`` times in a row is reported gone; it is found
/// again when it answers (a change of its records alone does not bring it back).
final class BrowseProbe: Sendable {
  /// How often the listed peers are tried: with ``timeout`` and ``misses``, a peer whose
  /// machine or link went is reported gone within 10 s of its last answer.
  static let interval: Duration = .seconds(2)
  /// How long a peer's addresses have to answer.
  static let timeout: Duration = .seconds(2)
  /// Failed tries in a row that make a peer gone.
  static let misses = 2

  private struct State {
    /// Failed tries in a row, by peer key.
    var missed: [String: Int] = [:]
    /// Peers reported gone and not found again, by peer key.
    var gone: Set<String> = []
  }

  private let state = Mutex(State())

  /// What identifies a listed peer: its name and domain, as mDNS compares them.
  static func key(of peer: DiscoveredPeer) -> String {
    "\(peer.name.lowercased())\u{0}\(peer.domain.lowercased())"
  }

  /// Starts afresh for `peer` (found, changed or lost through mDNS); returns whether it had
  /// been reported gone.
  func reset(_ peer: DiscoveredPeer) -> Bool {
    let key = Self.key(of: peer)
    return state.withLock { state in
      state.missed[key] = nil
      return state.gone.remove(key) != nil
    }
  }

  /// Whether `peer` was reported gone and has not answered since.
  func isGone(_ peer: DiscoveredPeer) -> Bool {
    let key = Self.key(of: peer)
    return state.withLock { $0.gone.contains(key) }
  }

  /// Tries `browser`'s peers every ``interval`` until the task is cancelled, calling `gone`
  /// for a peer that stopped answering and `back` for a gone one that answers again.
  func run(
    _ browser: Browser, gone: @Sendable (DiscoveredPeer) -> Void,
    back: @Sendable (DiscoveredPeer) -> Void
  ) async {
    while !Task.isCancelled {
      try? await Task.sleep(for: Self.interval)
      let peers = browser.peers.filter { $0.peerID != nil }
      let answers = await withTaskGroup(of: (DiscoveredPeer, Bool).self) { tasks in
        for peer in peers {
          tasks.addTask { (peer, !(await peer.answeringAddresses(within: Self.timeout).isEmpty)) }
        }
        return await tasks.reduce(into: []) { $0.append($1) }
      }
      // A peer lost or changed meanwhile is mDNS's to report.
      let listed = Set(browser.peers)
      for (peer, answered) in answers where listed.contains(peer) {
        let key = Self.key(of: peer)
        let change = state.withLock { state -> Bool? in
          if answered {
            state.missed[key] = nil
            return state.gone.remove(key) != nil ? true : nil
          }
          state.missed[key, default: 0] += 1
          guard state.missed[key]! >= Self.misses else { return nil }
          return state.gone.insert(key).inserted ? false : nil
        }
        switch change {
        case true?: back(peer)
        case false?: gone(peer)
        case nil: break
        }
      }
    }
  }
}
