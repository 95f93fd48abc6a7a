import Ferry
import Synchronization

/// `--once`: the first offer on an accepted connection is the one; whatever becomes of it is
/// the command's outcome, and every other offer is declined — except the same sender's, when
/// the one offer's link was lost and it comes back within the resume grace, or when the one
/// offer is a part of a larger batch and the next part comes (it is waited for as a sender
/// coming back is).
///
/// Each state carries the sender of the one offer, and while receiving, which transfer it is:
/// the late failure of a transfer whose sender already came back is not the outcome.
final class OnceGate: Sendable {
  private enum State {
    /// No offer yet.
    case open
    /// The one offer, from this sender, is being decided.
    case deciding(Fingerprint)
    /// The one offer was accepted; the library has not yet started it.
    case accepted(Fingerprint)
    /// The one offer is being received, as this transfer.
    case receiving(Fingerprint, ObjectIdentifier)
    /// The one offer's link was lost; its sender may come back for it. `generation` tells one
    /// wait from the next (a timer only ends its own).
    case awaitingResume(Fingerprint, generation: Int)
    /// Its outcome is known.
    case done
  }

  /// What to make of a transfer of the one offer that ended with its link lost.
  enum Lost {
    /// Wait for its sender to come back; the wait is this generation.
    case wait(generation: Int)
    /// It is not the one being followed (its sender came back already): ignore it.
    case stale
  }

  private let state = Mutex(State.open)
  private let generations = Atomic<Int>(0)

  /// An offer from `sender` came to be decided: true if it is the one (later ones are
  /// declined) — or the one again, from the sender that lost its link while sending it.
  func claimForDecision(from sender: Fingerprint) -> Bool {
    state.withLock { state in
      switch state {
      case .open:
        state = .deciding(sender)
        return true
      case .awaitingResume(let waitedFor, _) where waitedFor == sender:
        state = .deciding(sender)
        return true
      default:
        return false
      }
    }
  }

  /// A text came to be accepted: true if nothing was offered yet (it is then the one, and
  /// its outcome is known once shown). Never while a sender may come back for its files.
  func claimForText() -> Bool {
    state.withLock { state in
      guard case .open = state else { return false }
      state = .done
      return true
    }
  }

  /// The one offer was declined (its outcome) or accepted.
  func decided(accepted: Bool) {
    state.withLock { state in
      guard case .deciding(let sender) = state else { return }
      state = accepted ? .accepted(sender) : .done
    }
  }

  /// The library refused an offer from `sender`, or an invitation from a sender the policy
  /// accepts was declined for lack of space: true if that is the one offer's outcome (the
  /// first offer, refused before anyone was asked; the accepted one, refused for lack of
  /// space; or the one again, after its sender came back).
  func claimRefusal(from sender: Fingerprint, whenOpen: Bool = true) -> Bool {
    state.withLock { state in
      switch state {
      case .open where whenOpen:
        state = .done
        return true
      case .accepted(let one) where one == sender, .awaitingResume(let one, _) where one == sender:
        state = .done
        return true
      default:
        return false
      }
    }
  }

  /// Whether the offer accepted from `sender` never started (the library dropped it, its
  /// sender gone while it was decided): then it is over, with no outcome of its own.
  func acceptedButNeverStarted(from sender: Fingerprint) -> Bool {
    state.withLock { state in
      guard case .accepted(let one) = state, one == sender else { return false }
      state = .done
      return true
    }
  }

  /// Whether the one offer is being received from `sender` (its end not reported yet).
  func isReceiving(from sender: Fingerprint) -> Bool {
    state.withLock { state in
      guard case .receiving(let one, _) = state else { return false }
      return one == sender
    }
  }

  /// The accepted offer started arriving, as `transfer`.
  func receiving(_ transfer: IncomingTransfer) {
    state.withLock { state in
      if case .accepted(let sender) = state, sender == transfer.peer.fingerprint {
        state = .receiving(sender, ObjectIdentifier(transfer))
      }
    }
  }

  /// `transfer` ended, every file settled or for good: true if it is the one offer (its end
  /// is the outcome).
  func finished(_ transfer: IncomingTransfer) -> Bool {
    state.withLock { state in
      guard case .receiving(_, let id) = state, id == ObjectIdentifier(transfer) else {
        return false
      }
      state = .done
      return true
    }
  }

  /// `transfer` ended because its link was lost (its sender may come back for it), or it was a
  /// part of a batch whose next part is to come — unless it is not the one being followed.
  func linkLost(_ transfer: IncomingTransfer) -> Lost {
    state.withLock { state in
      guard case .receiving(let sender, let id) = state, id == ObjectIdentifier(transfer) else {
        return .stale
      }
      let generation = generations.add(1, ordering: .relaxed).newValue
      state = .awaitingResume(sender, generation: generation)
      return .wait(generation: generation)
    }
  }

  /// The sender of the one offer is being taken back (its old link may not have failed yet
  /// here): its old transfer's end is no longer the outcome, and the wait for its offer is
  /// the returned generation. Nil if `sender` is not the one offer's sender or the outcome is
  /// known.
  func expectResume(from sender: Fingerprint) -> Int? {
    state.withLock { state in
      switch state {
      case .deciding(let one), .accepted(let one), .receiving(let one, _),
        .awaitingResume(let one, _):
        guard one == sender else { return nil }
        let generation = generations.add(1, ordering: .relaxed).newValue
        state = .awaitingResume(sender, generation: generation)
        return generation
      case .open, .done:
        return nil
      }
    }
  }

  /// The wait numbered `generation` ended: true if its sender did not come back in it (the
  /// lost transfer is then the outcome).
  func resumeExpired(generation: Int) -> Bool {
    state.withLock { state in
      guard case .awaitingResume(_, let waited) = state, waited == generation else {
        return false
      }
      state = .done
      return true
    }
  }
}
