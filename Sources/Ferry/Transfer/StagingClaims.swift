import Synchronization

/// Staging names held by offers being received in this process (one writer per staged file),
/// and how many offers use each staging directory (it is removed only by its last user).
final class StagingClaims: Sendable {
  static let shared = StagingClaims()
  /// The most offers waiting for one staging name.
  static let maximumWaiters = 4
  private let claimed = Mutex<(keys: Set<String>, waiters: [String: [@Sendable () -> Void]])>(
    ([], [:]))
  private let users = Mutex<[String: Int]>([:])

  /// An offer opened staging directory `identity`.
  func open(_ identity: String) {
    users.withLock { $0[identity, default: 0] += 1 }
  }

  /// An offer is done with staging directory `identity`.
  func close(_ identity: String) {
    users.withLock { users in
      users[identity, default: 1] -= 1
      if users[identity] == 0 { users[identity] = nil }
    }
  }

  /// How many offers use staging directory `identity` now.
  func users(of identity: String) -> Int {
    users.withLock { $0[identity, default: 0] }
  }

  /// True the first time `key` is claimed (until released).
  func claim(_ key: String) -> Bool {
    claimed.withLock { $0.keys.insert(key).inserted }
  }

  /// Whether `key` is claimed.
  func isClaimed(_ key: String) -> Bool {
    claimed.withLock { $0.keys.contains(key) }
  }

  /// Calls `action` once `key` is released (at once if it is not claimed), outside the lock.
  func whenReleased(_ key: String, _ action: @escaping @Sendable () -> Void) {
    let now = claimed.withLock { claimed -> Bool in
      guard claimed.keys.contains(key) else { return true }
      // Bounded: a sender offering the same files again and again while one offer holds them
      // adds no more than a few waiters (the others just wait out their time).
      if claimed.waiters[key, default: []].count < Self.maximumWaiters {
        claimed.waiters[key, default: []].append(action)
      }
      return false
    }
    if now { action() }
  }

  /// Releases `keys`, then tells who waited for them.
  func release(_ keys: [String]) {
    let waiting = claimed.withLock { claimed in
      var waiting: [@Sendable () -> Void] = []
      for key in keys {
        claimed.keys.remove(key)
        waiting += claimed.waiters.removeValue(forKey: key) ?? []
      }
      return waiting
    }
    for action in waiting { action() }
  }
}
