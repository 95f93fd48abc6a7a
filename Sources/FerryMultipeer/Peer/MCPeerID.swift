import Ferry
import Foundation

/// A peer in a multipeer session, as MultipeerConnectivity's `MCPeerID`.
///
/// A peer is its identity, not its name: two `MCPeerID`s are equal (and hash alike) when the
/// identity behind them is the same, whatever name each shows (Avahi may show `alice #2` for
/// the `alice` a session connects to). ``init(displayName:)`` makes a new local peer with a new
/// identity (a self-signed TLS certificate and its key, in memory); to be the same peer in the
/// next launch, archive it (`NSKeyedArchiver` or `Codable`) and restore it, as Apple's docs
/// advise. The archive of a local peer holds its private key: store it as a secret.
///
/// Immutable, so usable from any thread.
open class MCPeerID: NSObject, NSCopying, NSSecureCoding, Codable, @unchecked Sendable {
  /// The name shown to other peers (1–63 UTF-8 bytes).
  public let displayName: String
  /// The Ferry peer behind it: the display name and the certificate's fingerprint.
  public let ferryPeer: PeerID
  /// The local identity, for a peer made here; nil for a remote peer.
  let identity: Identity?

  /// Makes a new local peer with a new identity.
  ///
  /// Traps, as Apple's raises `NSInvalidArgumentException`, when `myDisplayName` is empty,
  /// longer than 63 UTF-8 bytes, or holds control characters; ``isValid(displayName:)`` checks a
  /// name first.
  public init(displayName myDisplayName: String) {
    do {
      try PeerID.validate(displayName: myDisplayName)
    } catch {
      preconditionFailure(
        "MCPeerID: invalid displayName \(myDisplayName.debugDescription): \(error)")
    }
    let identity = Identity.generate()
    self.identity = identity
    self.ferryPeer = try! PeerID(displayName: myDisplayName, fingerprint: identity.fingerprint)
    self.displayName = myDisplayName
    super.init()
  }

  /// A local peer with an identity the application keeps (for example
  /// `Identity.loadOrCreate()`, the one the `ferry` command uses).
  ///
  /// - Throws: ``MCError`` `invalidParameter` when the display name is not valid.
  public init(displayName myDisplayName: String, identity: Identity) throws {
    do {
      self.ferryPeer = try PeerID(displayName: myDisplayName, fingerprint: identity.fingerprint)
    } catch {
      throw MCError(.invalidParameter, "invalid displayName: \(error)")
    }
    self.identity = identity
    self.displayName = myDisplayName
    super.init()
  }

  /// A remote peer, as discovery or a connection reports it.
  init(remote peer: PeerID) {
    self.ferryPeer = peer
    self.displayName = peer.displayName
    self.identity = nil
    super.init()
  }

  /// Whether `displayName` would make a valid peer (1–63 UTF-8 bytes, no control characters).
  public static func isValid(displayName: String) -> Bool {
    (try? PeerID.validate(displayName: displayName)) != nil
  }

  /// The SHA-256 fingerprint of the peer's certificate, in upper-case hex: what makes two peers the same
  /// one (not in Apple's API).
  public var fingerprint: String { ferryPeer.fingerprint.hexString }

  // MARK: - Equality by identity

  open override func isEqual(_ object: Any?) -> Bool {
    guard let other = object as? MCPeerID else { return false }
    return other.ferryPeer.fingerprint == ferryPeer.fingerprint
  }

  open override var hash: Int {
    ferryPeer.fingerprint.hashValue
  }

  open override var description: String {
    "<MCPeerID \(ferryPeer.fingerprint.shortDescription) DisplayName = \(displayName)>"
  }

  // MARK: - NSCopying

  /// Returns `self`: a peer is immutable.
  open func copy(with zone: NSZone? = nil) -> Any {
    self
  }

  // MARK: - NSSecureCoding

  /// True: the archive holds only strings.
  public static var supportsSecureCoding: Bool { true }

  private enum Key: String, CodingKey {
    case displayName, fingerprint, certificate, privateKey
  }

  /// Writes the display name and fingerprint, and for a local peer its certificate and private
  /// key (PEM).
  open func encode(with coder: NSCoder) {
    coder.encode(displayName as NSString, forKey: Key.displayName.rawValue)
    coder.encode(fingerprint as NSString, forKey: Key.fingerprint.rawValue)
    if let identity {
      coder.encode(identity.certificatePEM as NSString, forKey: Key.certificate.rawValue)
      coder.encode(identity.privateKeyPEM as NSString, forKey: Key.privateKey.rawValue)
    }
  }

  /// Restores a peer archived by ``encode(with:)``; nil when the archive is not one (the
  /// coder's error says why).
  public required init?(coder: NSCoder) {
    func text(_ key: Key) -> String? {
      coder.decodeObject(of: NSString.self, forKey: key.rawValue).map { String($0) }
    }
    guard
      let restored = Self.restore(
        displayName: text(.displayName), fingerprint: text(.fingerprint),
        certificate: text(.certificate), privateKey: text(.privateKey))
    else {
      coder.failWithError(
        NSError(
          domain: NSCocoaErrorDomain, code: NSCoderReadCorruptError,
          userInfo: [NSLocalizedDescriptionKey: "not an archived MCPeerID"]))
      return nil
    }
    (displayName, ferryPeer, identity) = restored
    super.init()
  }

  // MARK: - Codable

  /// Encodes the display name and fingerprint, and for a local peer its certificate and
  /// private key (PEM).
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: Key.self)
    try container.encode(displayName, forKey: .displayName)
    try container.encode(fingerprint, forKey: .fingerprint)
    if let identity {
      try container.encode(identity.certificatePEM, forKey: .certificate)
      try container.encode(identity.privateKeyPEM, forKey: .privateKey)
    }
  }

  /// Restores a peer encoded by ``encode(to:)``.
  ///
  /// - Throws: `DecodingError.dataCorrupted` when the fields do not make a valid peer (a
  ///   fingerprint that is not the certificate's, a key that is not the certificate's).
  public required init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: Key.self)
    guard
      let restored = Self.restore(
        displayName: try container.decode(String.self, forKey: .displayName),
        fingerprint: try container.decode(String.self, forKey: .fingerprint),
        certificate: try container.decodeIfPresent(String.self, forKey: .certificate),
        privateKey: try container.decodeIfPresent(String.self, forKey: .privateKey))
    else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: decoder.codingPath, debugDescription: "not an encoded MCPeerID"))
    }
    (displayName, ferryPeer, identity) = restored
    super.init()
  }

  /// Checks archived fields: a valid name and fingerprint, and for a local peer a certificate
  /// and key that match each other and the fingerprint.
  private static func restore(
    displayName: String?, fingerprint: String?, certificate: String?, privateKey: String?
  ) -> (String, PeerID, Identity?)? {
    guard let displayName, let fingerprint,
      let parsed = try? Fingerprint(parsing: fingerprint),
      let peer = try? PeerID(displayName: displayName, fingerprint: parsed)
    else { return nil }
    switch (certificate, privateKey) {
    case (nil, nil):
      return (displayName, peer, nil)
    case (let certificate?, let privateKey?):
      guard let identity = try? Identity(certificatePEM: certificate, privateKeyPEM: privateKey),
        identity.fingerprint == parsed
      else { return nil }
      return (displayName, peer, identity)
    default:
      return nil
    }
  }
}
