/// A peer as users and the protocol know it: a display name chosen by its owner and the
/// fingerprint of its identity certificate.
///
/// The display name is what people read; the fingerprint is the real key. Two peers with the same
/// name and different fingerprints are different peers (and, for a known name, a warning sign);
/// two with the same fingerprint are one peer whatever their names (a peer discovered as
/// `alice #2`, after Avahi renamed a clash, is the connected `alice`). Equality and hashing
/// are therefore by fingerprint alone; compare ``displayName`` where the name itself matters.
public struct PeerID: Hashable, Sendable, CustomStringConvertible {
  /// The longest display name in UTF-8 bytes: one DNS label, since the name is also the mDNS
  /// service instance name.
  public static let maximumDisplayNameBytes = 63

  /// The name shown to users, 1–63 UTF-8 bytes.
  public let displayName: String

  /// The SHA-256 fingerprint of the peer's certificate.
  public let fingerprint: Fingerprint

  /// Creates a peer identity.
  ///
  /// - Parameters:
  ///   - displayName: 1–63 bytes of UTF-8 with no control characters.
  ///   - fingerprint: The identity's certificate fingerprint.
  /// - Throws: ``PeerIDError`` when the display name is empty, too long or holds a control
  ///   character.
  public init(displayName: String, fingerprint: Fingerprint) throws(PeerIDError) {
    try Self.validate(displayName: displayName)
    self.displayName = displayName
    self.fingerprint = fingerprint
  }

  /// Checks a display name without building a peer.
  ///
  /// - Throws: ``PeerIDError`` as ``init(displayName:fingerprint:)`` does.
  public static func validate(displayName: String) throws(PeerIDError) {
    let byteCount = displayName.utf8.count
    if byteCount == 0 {
      throw .emptyDisplayName
    }
    if byteCount > maximumDisplayNameBytes {
      throw .displayNameTooLong(escaped(displayName, keepingUnicode: true), byteCount: byteCount)
    }
    if displayName.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
      throw .controlCharacterInDisplayName(escaped(displayName, keepingUnicode: true))
    }
  }

  /// Whether both are the same peer: the same fingerprint (names aside).
  public static func == (lhs: PeerID, rhs: PeerID) -> Bool {
    lhs.fingerprint == rhs.fingerprint
  }

  /// Hashes the fingerprint alone, as ``==`` compares it.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(fingerprint)
  }

  /// The display name (control, format and other invisible characters escaped) followed by
  /// the short fingerprint, e.g. `alice [9F2C 41AB 0C3D 7E11]`.
  public var description: String {
    "\(DisplayText.escaping(displayName)) [\(fingerprint.shortDescription)]"
  }
}
