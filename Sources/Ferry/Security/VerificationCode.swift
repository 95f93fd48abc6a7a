import Crypto

/// A six-digit code both ends of one connection compute, for their users to compare across
/// their screens (docs/PROTOCOL.md §6, docs/SECURITY.md). It is new for every connection: it
/// hashes the TLS session's exporter value with a nonce from each end — the advertiser's
/// committed to before it sees the inviter's — and both fingerprints. A man in the middle holds
/// a different TLS session with each side, so the two screens show unrelated codes, and the
/// commitment leaves it one guess in a million per attempt, with nothing to precompute.
public struct VerificationCode: Hashable, Sendable, CustomStringConvertible {
  /// The six digits, e.g. `"042917"`.
  public let digits: String

  /// The TLS exporter label of the code's keying material (RFC 8446 §7.5, with an empty
  /// context).
  static let exporterLabel = "EXPORTER-ferry verification code"
  /// The length of the keying material taken from the exporter, in bytes.
  static let keyingMaterialSize = 32
  /// The prefix of the hashed input (26 ASCII bytes).
  static let domain = Array("ferry verification code v4".utf8)

  /// Derives the code of one connection.
  ///
  /// - Parameters:
  ///   - keyingMaterial: The connection's TLS exporter value (``exporterLabel``, empty context,
  ///     ``keyingMaterialSize`` bytes); both ends of one TLS session derive the same.
  ///   - inviterNonce: The nonce the inviter sent in INVITE.
  ///   - advertiserNonce: The nonce the advertiser committed to in COMMIT and sent in REVEAL.
  ///   - first: One end's fingerprint; `second` the other's, in either order.
  init(
    keyingMaterial: [UInt8], inviterNonce: [UInt8], advertiserNonce: [UInt8],
    fingerprints first: Fingerprint, _ second: Fingerprint
  ) {
    let (low, high) =
      first.bytes.lexicographicallyPrecedes(second.bytes) ? (first, second) : (second, first)
    var hasher = SHA256()
    hasher.update(data: Self.domain)
    hasher.update(data: keyingMaterial)
    hasher.update(data: inviterNonce)
    hasher.update(data: advertiserNonce)
    hasher.update(data: low.bytes)
    hasher.update(data: high.bytes)
    let digest = Array(hasher.finalize())
    let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 1_000_000
    let text = String(value)
    digits = String(repeating: "0", count: 6 - text.count) + text
  }

  /// The digits in two groups of three, e.g. `042 917`.
  public var description: String {
    "\(digits.prefix(3)) \(digits.suffix(3))"
  }

  /// A fresh random nonce: 32 bytes from the system's secure random generator.
  static func makeNonce() -> [UInt8] {
    SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
  }

  /// The commitment to `nonce` that COMMIT carries: its SHA-256.
  static func commitment(to nonce: [UInt8]) -> [UInt8] {
    Array(SHA256.hash(data: nonce))
  }
}
