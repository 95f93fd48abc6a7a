/// Why bytes or text are not a fingerprint.
public enum FingerprintError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The digest does not have 32 bytes; the payload is how many it had.
  case wrongLength(Int)
  /// The text holds a character that is not a hexadecimal digit, space or colon.
  case notHexadecimal(String)

  /// A one-line explanation.
  public var description: String {
    switch self {
    case .wrongLength(let count):
      return "a fingerprint is a SHA-256 digest of 32 bytes (64 hex digits), not \(count) bytes"
    case .notHexadecimal(let text):
      return "\"\(text)\" is not a fingerprint: use hexadecimal digits, optionally grouped"
    }
  }
}
