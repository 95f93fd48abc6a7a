import Crypto

/// A six-digit code both ends of a connection compute from the two fingerprints, in either
/// order. Users compare it across their screens: a man in the middle holds different keys on
/// each side, so the two screens would show different codes.
public struct VerificationCode: Hashable, Sendable, CustomStringConvertible {
  /// The six digits, e.g. `"042917"`.
  public let digits: String

  /// Derives the code from the two peers' fingerprints; the order does not matter.
  public init(_ first: Fingerprint, _ second: Fingerprint) {
    let (low, high) =
      first.bytes.lexicographicallyPrecedes(second.bytes) ? (first, second) : (second, first)
    var hasher = SHA256()
    hasher.update(data: Array("ferry verification code v1".utf8))
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
}
