import Ferry
import FerryAgent
import Synchronization

/// The keys of the receivers that accepted, by the address they were asked at: how a named
/// address without a key learns the one its first contact proved (``SendEvent/asked`` names
/// the address and the key proven in the TLS handshake; ``SendEvent/accepted`` says it took
/// the send). Any thread.
final class AcceptedKeys: Sendable {
  private struct State {
    var asked: [String: Fingerprint] = [:]
    var accepted: Set<Fingerprint> = []
  }

  private let state = Mutex(State())

  /// Notes what `event` says of who was asked and who accepted.
  func record(_ event: SendEvent) {
    switch event {
    case .asked(_, let peer, let address?, _):
      state.withLock { $0.asked[address] = peer.fingerprint }
    case .accepted(let peer, _):
      state.withLock { _ = $0.accepted.insert(peer.fingerprint) }
    default:
      break
    }
  }

  /// The key that accepted when asked at `address`; nil when none did.
  func key(at address: String) -> Fingerprint? {
    state.withLock { state in
      state.asked[address].flatMap { state.accepted.contains($0) ? $0 : nil }
    }
  }
}
