import Ferry
import Synchronization

/// Whom `ferry receive` accepts without asking: nobody (ask on the terminal), everyone
/// (`--yes`), or chosen senders: those `--accept-from` names by fingerprint and, with
/// `--accept-trusted`, those marked with `ferry trust`.
enum ReceivePolicy: Sendable {
  /// Ask the person at the terminal, about the invitation and then about each offer.
  case ask
  /// `--yes`: accept everything.
  case everyone
  /// `--accept-from` and `--accept-trusted`: accept these keys (full fingerprints, or prefixes
  /// of at least 16 digits) and, if `trusted`, the peers trusted with `ferry trust` (by their
  /// full fingerprint, so never a changed key). The rest is declined when `--accept-from` was
  /// given; with only `--accept-trusted` it is asked about (`askOthers`, on a terminal) or
  /// declined (no terminal).
  case senders([AcceptedKey], trusted: Bool, askOthers: Bool)

  /// The banner's words for whom it accepts without asking.
  var banner: String {
    switch self {
    case .ask:
      return "Every sender is asked about here."
    case .everyone:
      return "Accepting EVERY sender without asking (--yes): anyone nearby can write here."
    case .senders(let keys, let trusted, let askOthers):
      var whom: [String] = []
      if !keys.isEmpty { whom.append(Quantity.count(keys.count, "chosen key")) }
      if trusted { whom.append("peers marked with 'ferry trust'") }
      let others = askOthers ? "others are asked about" : "others are declined"
      return "Accepting \(whom.joined(separator: " and ")) without asking; \(others)."
    }
  }

  /// One `--accept-from` value: the key it stands for, and whether the user gave all its
  /// digits.
  struct AcceptedKey: Sendable, Equatable {
    /// The key: a full fingerprint (typed, or the one known peer a prefix names) or a prefix.
    let reference: PeerReference
    /// All 64 digits were given: consent to that very key, even when its name is pinned to
    /// another (KEY CHANGED, LOOK-ALIKE NAME). A prefix is not, even one that names a known
    /// peer: it was not checked against this key digit by digit.
    let full: Bool
  }

  /// The policy for the command's flags; `--accept-from` values must each stand for a key.
  /// `canAsk`: a person can be asked (standard input is a terminal).
  ///
  /// - Throws: ``CLIFailure`` (usage) for a value that is not a fingerprint, is too short to
  ///   stand for a key, or matches several known peers.
  static func from(
    yes: Bool, acceptFrom: [String], acceptTrusted: Bool = false, canAsk: Bool = false,
    knownPeers: KnownPeers
  ) throws(CLIFailure) -> ReceivePolicy {
    if yes { return .everyone }
    guard !acceptFrom.isEmpty || acceptTrusted else { return .ask }
    var keys: [AcceptedKey] = []
    for text in acceptFrom {
      let full = Fingerprint.prefixLength(of: text) == Fingerprint.byteCount * 2
      switch try PeerReference.parse(text, knownPeers: knownPeers) {
      case .name(_, let known?):
        keys.append(AcceptedKey(reference: .fingerprint(known), full: false))
      case .name where (Fingerprint.prefixLength(of: text) ?? 0) > 0:
        throw CLIFailure(
          status: .usage,
          message: "--accept-from '\(DisplayText.escaping(text))': too few digits to stand for "
            + "a key and no known peer's fingerprint starts with them; give at least "
            + "\(Fingerprint.minimumPrefixDigits) hex digits ('ferry identity' on the sender "
            + "shows them)",
          code: .shortFingerprint)
      case .name:
        throw CLIFailure(
          status: .usage,
          message: "--accept-from wants a fingerprint: '\(DisplayText.escaping(text))' is not "
            + "hexadecimal (names are labels anyone can take; 'ferry identity' on the sender "
            + "shows its fingerprint)",
          code: .invalidFingerprint)
      case let key:
        keys.append(AcceptedKey(reference: key, full: full))
      }
    }
    return .senders(keys, trusted: acceptTrusted, askOthers: acceptFrom.isEmpty && canAsk)
  }

  /// Whether `invitation` is accepted without asking, and if not, the reason given to the
  /// sender; nil when the person must be asked.
  func decision(for invitation: Invitation) -> (accept: Bool, reason: String)? {
    decision(for: invitation.fingerprint, status: invitation.status)
  }

  /// Whether a sender with `fingerprint`, known as `status`, is accepted without asking (as
  /// for an invitation). A sender whose name is pinned to another key (or looks
  /// like a pinned one) is accepted by `--accept-from` only if all 64 digits of its fingerprint
  /// were given: a prefix policy never waves a changed key through, not even a prefix that
  /// names a known peer.
  func decision(for fingerprint: Fingerprint, status: KnownPeers.Status)
    -> (accept: Bool, reason: String)?
  {
    switch self {
    case .ask:
      return nil
    case .everyone:
      return (true, "")
    case .senders(let keys, let trusted, let askOthers):
      // Trusted by its full fingerprint: a changed key is .changedKey, never .known.
      if trusted, case .known(trusted: true) = status { return (true, "") }
      let suspicious: Bool
      switch status {
      case .changedKey, .similarName: suspicious = true
      case .known, .new: suspicious = false
      }
      let matching = keys.filter { $0.reference.matchesFingerprint(fingerprint) }
      if matching.contains(where: { $0.full || !suspicious }) { return (true, "") }
      let matched = !matching.isEmpty
      if askOthers && !matched { return nil }
      return (false, matched ? "its key changed" : "not an accepted sender")
    }
  }
}
