import ArgumentParser
import Ferry
import Foundation
import Synchronization

/// The receivers some `--to` already resolved to.
final class ClaimedReceivers: Sendable {
  private let claimed = Mutex<Set<Fingerprint>>([])

  /// True the first time `fingerprint` is claimed.
  func claim(_ fingerprint: Fingerprint) -> Bool {
    claimed.withLock { $0.insert(fingerprint).inserted }
  }
}
