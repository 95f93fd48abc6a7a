import Synchronization

/// The alias last announced from each address, for naming a LocalSend sender that was turned
/// away before it said anything: at most ``capacity`` addresses (a flood of announcements
/// replaces the oldest). A label only, never proof of who sent. Thread-safe.
final class LocalSendAliases: Sendable {
  /// Addresses remembered at most.
  static let capacity = 256

  private let known = Mutex<(byAddress: [String: String], order: [String])>(([:], []))

  /// `alias` was announced from `address`.
  func heard(_ alias: String, at address: String) {
    known.withLock { known in
      if known.byAddress.updateValue(alias, forKey: address) == nil {
        known.order.append(address)
        if known.order.count > Self.capacity {
          known.byAddress[known.order.removeFirst()] = nil
        }
      }
    }
  }

  /// The alias last announced from `address`, if any.
  func alias(at address: String) -> String? {
    known.withLock { $0.byAddress[address] }
  }
}
