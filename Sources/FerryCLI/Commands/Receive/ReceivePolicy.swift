import Ferry
import Synchronization

/// Whom `ferry receive` accepts without asking: nobody (ask on the terminal), everyone
/// (`--yes`), or the senders `--accept-from` names by fingerprint.
enum ReceivePolicy: Sendable {
  /// Ask the person at the terminal, about the invitation and then about each offer.
  case ask
  /// `--yes`: accept everything.
  case everyone
  /// `--accept-from`: accept these keys (full fingerprints, or prefixes of at least 16 digits),
  /// decline the rest.
  case senders([PeerReference])

  /// The policy for the command's flags; `--accept-from` values must each stand for a key.
  ///
  /// - Throws: ``CLIFailure`` (usage) for a value that is not a fingerprint, is too short to
  ///   stand for a key, or matches several known peers.
  static func from(yes: Bool, acceptFrom: [String], knownPeers: KnownPeers) throws(CLIFailure)
    -> ReceivePolicy
  {
    if yes { return .everyone }
    guard !acceptFrom.isEmpty else { return .ask }
    var keys: [PeerReference] = []
    for text in acceptFrom {
      switch try PeerReference.parse(text, knownPeers: knownPeers) {
      case .name(_, let known?):
        keys.append(.fingerprint(known))
      case .name where (Fingerprint.prefixLength(of: text) ?? 0) > 0:
        throw CLIFailure(
          status: .usage,
          message: "--accept-from '\(DisplayText.escaping(text))': too few digits to stand for "
            + "a key and no known peer's fingerprint starts with them; give at least "
            + "\(Fingerprint.minimumPrefixDigits) hex digits ('ferry identity' on the sender "
            + "shows them)",
          code: "short-fingerprint")
      case .name:
        throw CLIFailure(
          status: .usage,
          message: "--accept-from wants a fingerprint: '\(DisplayText.escaping(text))' is not "
            + "hexadecimal (names are labels anyone can take; 'ferry identity' on the sender "
            + "shows its fingerprint)",
          code: "invalid-fingerprint")
      case let key:
        keys.append(key)
      }
    }
    return .senders(keys)
  }

  /// Whether `invitation` is accepted without asking, and if not, the reason given to the
  /// sender; nil when the person must be asked. A sender whose name is known with another key
  /// (or looks like a known one) is accepted by `--accept-from` only if its full fingerprint
  /// was named: a prefix policy never waves a changed key through.
  func decision(for invitation: Invitation) -> (accept: Bool, reason: String)? {
    switch self {
    case .ask:
      return nil
    case .everyone:
      return (true, "")
    case .senders(let keys):
      let suspicious: Bool
      switch invitation.status {
      case .changedKey, .similarName: suspicious = true
      case .known, .new: suspicious = false
      }
      let admitted = keys.contains { key in
        guard key.matchesFingerprint(invitation.fingerprint) else { return false }
        if case .fingerprint = key { return true }
        return !suspicious
      }
      if admitted { return (true, "") }
      let matched = keys.contains { $0.matchesFingerprint(invitation.fingerprint) }
      return (false, matched ? "its key changed" : "not an accepted sender")
    }
  }
}

/// What a sender was accepted with, by fingerprint: the policy, or the summary the person said
/// yes to, and how many of its offers were seen. The first offer on an accepted connection is
/// checked against the summary; every later one needs its own yes.
final class Approvals: Sendable {
  /// One sender's approval.
  struct Approval: Sendable {
    /// What the invitation announced (nil: it did not say).
    let summary: OfferSummary?
    /// Whether a policy (`--yes`, `--accept-from`) accepted it, rather than a person.
    let byPolicy: Bool
    /// What this machine knew of the sender when it was accepted.
    let status: KnownPeers.Status
    /// The code both ends showed.
    let code: VerificationCode
    /// Offers from it seen since.
    var offers = 0
  }

  private let approvals = Mutex<[Fingerprint: Approval]>([:])

  /// Records that `invitation` was accepted, announcing `summary`.
  func record(_ invitation: Invitation, summary: OfferSummary?, byPolicy: Bool) {
    approvals.withLock {
      $0[invitation.fingerprint] = Approval(
        summary: summary, byPolicy: byPolicy, status: invitation.status,
        code: invitation.verificationCode)
    }
  }

  /// The approval of `fingerprint` as it stood when this offer came (its `offers` counts the
  /// ones before), counting the offer; nil if it was never accepted.
  func next(_ fingerprint: Fingerprint) -> Approval? {
    approvals.withLock { approvals in
      guard let approval = approvals[fingerprint] else { return nil }
      approvals[fingerprint]?.offers += 1
      return approval
    }
  }
}

/// Prompts take turns: one question on the terminal at a time, in the order asked.
actor PromptTurns {
  private var busy = false
  private var waiting: [CheckedContinuation<Void, Never>] = []

  /// Runs `ask` when no other prompt is on screen.
  func take<T: Sendable>(_ ask: @Sendable () async -> T) async -> T {
    if busy {
      await withCheckedContinuation { waiting.append($0) }
    }
    busy = true
    let result = await ask()
    if waiting.isEmpty {
      busy = false
    } else {
      waiting.removeFirst().resume()
    }
    return result
  }
}

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
