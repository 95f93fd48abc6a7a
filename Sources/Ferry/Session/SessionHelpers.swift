import Synchronization

// Small synchronization helpers of Session's connection attempts.

/// True for the first caller only.
final class Once: Sendable {
  private let claimed = Atomic<Bool>(false)

  func claim() -> Bool {
    !claimed.exchange(true, ordering: .acquiringAndReleasing)
  }
}

/// Carries the link out of a channel initializer.
final class LinkBox: Sendable {
  let link = Mutex<ConnectionLink?>(nil)
}
