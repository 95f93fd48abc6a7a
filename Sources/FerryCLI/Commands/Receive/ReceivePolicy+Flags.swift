import Ferry
import FerryAgent

extension ReceivePolicy {
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

  /// The policy for the command's flags: `--yes`, `--accept-from` (each value must stand for a
  /// key), `--accept-trusted`. `canAsk`: a person can be asked (standard input is a terminal).
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
        keys.append(AcceptedKey(.fingerprint(known), full: false))
      case .name where (Fingerprint.prefixLength(of: text) ?? 0) > 0:
        throw CLIFailure(
          status: .usage,
          message: "--accept-from '\(DisplayText.escaping(text))': too few digits to stand for "
            + "a key and no known peer's fingerprint starts with them; give at least "
            + "\(Fingerprint.minimumPrefixDigits) hex digits ('ferry identity' on the sender "
            + "shows them)",
          code: .shortFingerprint)
      case .name, .nickname:
        throw CLIFailure(
          status: .usage,
          message: "--accept-from wants a fingerprint: '\(DisplayText.escaping(text))' is not "
            + "hexadecimal (names are labels anyone can take; 'ferry identity' on the sender "
            + "shows its fingerprint)",
          code: .invalidFingerprint)
      case .fingerprint(let key):
        keys.append(AcceptedKey(.fingerprint(key), full: full))
      case .prefix(let prefix):
        keys.append(AcceptedKey(.prefix(prefix), full: full))
      }
    }
    return .senders(keys, trusted: acceptTrusted, askOthers: acceptFrom.isEmpty && canAsk)
  }
}
