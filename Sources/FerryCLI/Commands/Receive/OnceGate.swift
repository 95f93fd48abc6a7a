import Ferry
import Synchronization

/// `--once`: the first offer on an accepted connection is the one; whatever becomes of it is
/// the command's outcome, and every other offer is declined.
final class OnceGate: Sendable {
  private enum State {
    /// No offer yet.
    case open
    /// The one offer is being decided.
    case deciding
    /// The one offer was accepted; the library has not yet started it.
    case accepted
    /// The one offer is being received.
    case receiving
    /// Its outcome is known.
    case done
  }

  private let state = Mutex(State.open)

  /// An offer came to be decided: true if it is the one (later ones are declined).
  func claimForDecision() -> Bool {
    state.withLock { state in
      guard case .open = state else { return false }
      state = .deciding
      return true
    }
  }

  /// The one offer was declined (its outcome) or accepted.
  func decided(accepted: Bool) {
    state.withLock { $0 = accepted ? .accepted : .done }
  }

  /// The library refused an offer: true if that is the one offer's outcome (the first offer,
  /// refused before anyone was asked; or the accepted one, refused for lack of space).
  func claimRefusal() -> Bool {
    state.withLock { state in
      switch state {
      case .open, .accepted:
        state = .done
        return true
      case .deciding, .receiving, .done:
        return false
      }
    }
  }

  /// The accepted offer started arriving.
  func receiving() {
    state.withLock { state in
      if case .accepted = state { state = .receiving }
    }
  }
}
