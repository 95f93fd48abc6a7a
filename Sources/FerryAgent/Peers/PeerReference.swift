import Ferry
import Foundation

/// What a user means by a receiver or sender named in words (`--to X`, `--accept-from X`,
/// `ferry trust X`, a daemon's target): fingerprints are identities, names are labels.
///
/// - 64 hexadecimal digits: that fingerprint.
/// - 16 or more digits (64 bits; spaces and colons allowed): a fingerprint prefix, which only a
///   key made on purpose could share — unless it names exactly one known peer, then it is that
///   peer's fingerprint.
/// - 8 to 15 digits: only as a trusted peer's fingerprint (peers.json, `ferry trust`); on its
///   own such a prefix can be forged in hours, and a peer merely seen once may be such a
///   forgery, so it is refused otherwise, saying why.
/// - Anything else is a display name — except that a name of 8 or more hex digits is never
///   matched as a name, so that nobody can pass for a fingerprint by choosing such a name. A
///   short hex name (`cafe`) that also names exactly one known peer's fingerprint stands for
///   both, and a receiver matching each in a different peer is ambiguous.
/// - For `--to`, a display name pinned to trusted peers (``resolvingNickname(in:)``) stands for
///   their keys too: the user's name for them, whatever name they advertise.
public enum PeerReference: Sendable, Equatable {
  /// A full fingerprint: typed in full, or resolved in peers.json.
  case fingerprint(Fingerprint)
  /// A prefix of at least ``Fingerprint/minimumPrefixDigits`` digits, not in peers.json.
  case prefix(String)
  /// A display name; `known` when the same text is also a prefix naming one trusted peer.
  case name(String, known: Fingerprint?)
  /// A display name pinned to trusted peers (`ferry trust FPR --name NAME`, or the name a peer
  /// had when it was trusted): those peers' `keys`, whatever name they advertise now. A
  /// receiver with another key advertising it is matched by name too: ambiguous, or KEY
  /// CHANGED.
  case nickname(String, keys: [Fingerprint])

  /// Digits below which a hex-only text may still be a display name.
  public static let nameDigitLimit = 8

  /// Classifies `text`, resolving prefixes in `knownPeers`.
  ///
  /// - Throws: ``PeerReferenceError`` for a prefix too short to identify a key or matching
  ///   several known peers, or an unreadable peers file.
  public init(_ text: String, knownPeers: KnownPeers) throws(PeerReferenceError) {
    self = try Self.classify(text, knownPeers: knownPeers)
  }

  private static func classify(_ text: String, knownPeers: KnownPeers)
    throws(PeerReferenceError) -> PeerReference
  {
    let shown = DisplayText.escaping(text)
    guard let digits = Fingerprint.prefixLength(of: text), digits > 0 else {
      return .name(text, known: nil)
    }
    if digits == Fingerprint.byteCount * 2, let full = try? Fingerprint(parsing: text) {
      return .fingerprint(full)
    }
    let known: [Fingerprint]
    do {
      // A prefix too short to stand for a key alone resolves only to peers the user trusted.
      known = try knownPeers.fingerprints(
        startingWith: text, trustedOnly: digits < Fingerprint.minimumPrefixDigits)
    } catch {
      throw PeerReferenceError(.peersFile, error.description)
    }
    if digits < nameDigitLimit {
      return .name(text, known: known.count == 1 ? known[0] : nil)
    }
    if known.count == 1 { return .fingerprint(known[0]) }
    if known.count > 1 {
      throw PeerReferenceError(
        .ambiguous, "'\(shown)' starts \(known.count) known peers' fingerprints; give more digits")
    }
    guard digits >= Fingerprint.minimumPrefixDigits else {
      throw PeerReferenceError(
        .tooShort,
        "'\(shown)' is \(digits) hex digits: too few to stand for a key (a key with "
          + "that prefix can be made in hours). Give at least \(Fingerprint.minimumPrefixDigits) "
          + "digits ('ferry identity' on that machine shows them), the full fingerprint, or a "
          + "prefix of a trusted peer in 'ferry peers' ('ferry trust')")
    }
    return .prefix(text)
  }

  /// This reference, or for a display name pinned to trusted peers in `knownPeers`, a
  /// ``nickname(_:keys:)`` with their keys: `--to "Office box"` after `ferry trust FPR --name
  /// "Office box"` finds that key, whatever name it advertises. Names compare as in
  /// ``matchesName(_:)``.
  ///
  /// - Throws: ``PeerReferenceError`` for an unreadable peers file.
  public func nickname(in knownPeers: KnownPeers) throws(PeerReferenceError) -> PeerReference {
    guard case .name(let text, .none) = self else { return self }
    let entries: [KnownPeers.Entry]
    do {
      entries = try knownPeers.all()
    } catch {
      throw PeerReferenceError(.peersFile, error.description)
    }
    let wanted = Self.folded(text)
    let keys = entries.filter { $0.trusted && Self.folded($0.name) == wanted }
      .compactMap { try? Fingerprint(parsing: $0.fingerprint) }
    return keys.isEmpty ? self : .nickname(text, keys: keys)
  }

  /// Whether a peer advertising `name` is named by this reference (names made only of 8 or more
  /// hex digits are never matched as names). Case, surrounding spaces and Unicode's two ways of
  /// writing an accent do not count: `--to "kitchen laptop "` finds "Kitchen laptop". (Two
  /// receivers whose names differ only so are then both matched: ambiguous, never a guess.)
  public func matchesName(_ name: String) -> Bool {
    let wanted: String
    switch self {
    case .name(let text, _), .nickname(let text, _): wanted = text
    case .fingerprint, .prefix: return false
    }
    if let digits = Fingerprint.prefixLength(of: name), digits >= Self.nameDigitLimit {
      return false
    }
    return Self.folded(name) == Self.folded(wanted)
  }

  /// `name` as names are compared: trimmed, composed, lowercased.
  public static func folded(_ name: String) -> String {
    name.trimmingCharacters(in: .whitespaces).precomposedStringWithCanonicalMapping.lowercased()
  }

  /// Whether `fingerprint` is the key this reference names.
  public func matchesFingerprint(_ fingerprint: Fingerprint) -> Bool {
    switch self {
    case .fingerprint(let expected): return fingerprint == expected
    case .prefix(let prefix): return fingerprint.hasPrefix(prefix)
    case .name(_, let known): return known == fingerprint
    case .nickname(_, let keys): return keys.contains(fingerprint)
    }
  }

  /// Whether this is a name that also stands for known keys (a trusted peer's short prefix or
  /// nickname): a receiver found by the name alone waits a moment for those keys.
  public var alsoNamesKnownKeys: Bool {
    switch self {
    case .name(_, let known): return known != nil
    case .nickname: return true
    case .fingerprint, .prefix: return false
    }
  }

  /// Whether the reference names a key (and so pins it: the user's consent to that key). A
  /// nickname does not here: it may stand for several keys, so a receiver reached at an
  /// `--address` is checked once connected (``matchesFingerprint(_:)``, then its key).
  public var isKey: Bool {
    switch self {
    case .fingerprint, .prefix: return true
    case .name, .nickname: return false
    }
  }
}

/// Why a text does not name a peer.
public struct PeerReferenceError: Error, Sendable, CustomStringConvertible {
  /// What is wrong.
  public enum Kind: Sendable, Equatable {
    /// The known peers' file cannot be read.
    case peersFile
    /// A prefix that starts several known peers' fingerprints.
    case ambiguous
    /// Too few digits to stand for a key.
    case tooShort
  }

  /// What is wrong.
  public let kind: Kind
  /// In words, with the text escaped.
  public let message: String

  init(_ kind: Kind, _ message: String) {
    (self.kind, self.message) = (kind, message)
  }

  /// The message.
  public var description: String { message }
}
