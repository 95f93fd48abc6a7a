import Ferry

/// Whom a ``Receiver`` accepts without asking: nobody (ask), everyone (`--yes`), or chosen
/// senders — keys given by fingerprint (`--accept-from`) and, when `trusted`, the peers marked
/// with `ferry trust`. A policy is a ``ReceiveDecider`` on its own (it asks nobody: a question
/// it cannot decide is declined), or the first step of one (``asking(_:)``).
public enum ReceivePolicy: Sendable, Equatable {
  /// Ask about every sender, and then about each offer an approval does not cover.
  case ask
  /// Accept everything (`--yes`).
  case everyone
  /// Accept these keys (full fingerprints, or prefixes of at least 16 digits) and, if
  /// `trusted`, the peers trusted with `ferry trust` (by their full fingerprint, so never a
  /// changed key). The rest is declined, or asked about when `askOthers`.
  case senders([AcceptedKey], trusted: Bool, askOthers: Bool)

  /// One accepted key, and whether all its digits were given.
  public struct AcceptedKey: Sendable, Equatable {
    /// A key as it was given.
    public enum Key: Sendable, Equatable {
      /// A full fingerprint: typed in full, or the one known peer a prefix names.
      case fingerprint(Fingerprint)
      /// A prefix of at least ``Fingerprint/minimumPrefixDigits`` hex digits.
      case prefix(String)
    }

    /// The key.
    public let key: Key
    /// All 64 digits were given: consent to that very key, even when its name is pinned to
    /// another (KEY CHANGED, LOOK-ALIKE NAME). A prefix is not, even one that names a known
    /// peer: it was not checked against this key digit by digit.
    public let full: Bool

    /// An accepted key.
    public init(_ key: Key, full: Bool) {
      (self.key, self.full) = (key, full)
    }

    /// Whether `fingerprint` is this key.
    public func matches(_ fingerprint: Fingerprint) -> Bool {
      switch key {
      case .fingerprint(let expected): return fingerprint == expected
      case .prefix(let prefix): return fingerprint.hasPrefix(prefix)
      }
    }
  }

  /// Whether a sender with `fingerprint`, known as `status`, is accepted without asking, and
  /// if not the reason it is given; nil when someone must be asked. A sender whose name is
  /// pinned to another key (or looks like a pinned one) is accepted by an accepted key only
  /// if all 64 digits of its fingerprint were given: a prefix never waves a changed key
  /// through, not even one that names a known peer.
  public func decision(for fingerprint: Fingerprint, status: KnownPeers.Status)
    -> StandingAnswer?
  {
    switch self {
    case .ask:
      return nil
    case .everyone:
      return StandingAnswer(accept: true)
    case .senders(let keys, let trusted, let askOthers):
      // Trusted by its full fingerprint: a changed key is .changedKey, never .known.
      if trusted, case .known(trusted: true) = status { return StandingAnswer(accept: true) }
      let suspicious: Bool
      switch status {
      case .changedKey, .similarName: suspicious = true
      case .known, .new: suspicious = false
      }
      let matching = keys.filter { $0.matches(fingerprint) }
      if matching.contains(where: { $0.full || !suspicious }) {
        return StandingAnswer(accept: true)
      }
      let matched = !matching.isEmpty
      if askOthers && !matched { return nil }
      return StandingAnswer(
        accept: false, reason: matched ? "its key changed" : "not an accepted sender")
    }
  }

  /// A policy over a decider that asks: what this policy does not decide, `asker` is asked.
  public func asking(_ asker: any ReceiveDecider) -> any ReceiveDecider {
    PolicyThenAsk(policy: self, asker: asker)
  }
}

extension ReceivePolicy: ReceiveDecider {
  /// The policy's answer: `--yes` takes everyone; an accept list or trust takes only a key a
  /// certificate proved — a sender that proved none (an unverified LocalSend app, a browser)
  /// is asked about when others are, declined otherwise.
  public func standingAnswer(for sender: SenderFacts) -> StandingAnswer? {
    if sender.verified { return decision(for: sender.peer.fingerprint, status: sender.status) }
    switch self {
    case .ask: return nil
    case .everyone: return StandingAnswer(accept: true)
    case .senders(_, _, let askOthers):
      return askOthers
        ? nil
        : StandingAnswer(
          accept: false, reason: "an unverified LocalSend sender is not an accepted sender")
    }
  }

  /// Nobody is asked: no answer.
  public func decide(_ question: ConsentQuestion) async -> ConsentAnswer { .noAnswer }
}

/// A policy first, then someone who is asked.
private struct PolicyThenAsk: ReceiveDecider {
  let policy: ReceivePolicy
  let asker: any ReceiveDecider

  func standingAnswer(for sender: SenderFacts) -> StandingAnswer? {
    policy.standingAnswer(for: sender)
  }

  func decide(_ question: ConsentQuestion) async -> ConsentAnswer {
    await asker.decide(question)
  }
}
