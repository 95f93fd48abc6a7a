import Ferry
import Synchronization

/// `--once`: the first offer on an accepted connection is the one; whatever becomes of it is
/// the command's outcome, and every other offer is declined — except the same sender's, when
/// the one offer's link was lost and it comes back within the resume grace.
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
    /// The one offer's link was lost; its sender may come back for it (``awaitResume(from:)``).
    case awaitingResume(Fingerprint)
    /// Its outcome is known.
    case done
  }

  private let state = Mutex(State.open)

  /// An offer from `sender` came to be decided: true if it is the one (later ones are
  /// declined) — or the one again, from the sender that lost its link while sending it.
  func claimForDecision(from sender: Fingerprint) -> Bool {
    state.withLock { state in
      switch state {
      case .open:
        state = .deciding
        return true
      case .awaitingResume(let waitedFor) where waitedFor == sender:
        state = .deciding
        return true
      default:
        return false
      }
    }
  }

  /// The one offer's link was lost under way: true if its sender may now come back for it
  /// (the outcome waits), false if the outcome is already known.
  func awaitResume(from sender: Fingerprint) -> Bool {
    state.withLock { state in
      switch state {
      case .accepted, .receiving, .deciding:
        state = .awaitingResume(sender)
        return true
      default:
        return false
      }
    }
  }

  /// The wait for `sender` to come back ended: true if it did not (the lost transfer is then
  /// the outcome).
  func resumeExpired(from sender: Fingerprint) -> Bool {
    state.withLock { state in
      guard case .awaitingResume(let waitedFor) = state, waitedFor == sender else { return false }
      state = .done
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
      case .deciding, .receiving, .awaitingResume, .done:
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
