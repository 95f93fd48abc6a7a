/// MultipeerConnectivity's encryption preference. Ferry always runs mutual TLS 1.3, so every
/// preference gets encryption; the value is kept and reported, and changes nothing
/// (docs/MULTIPEER.md).
public enum MCEncryptionPreference: Int, Sendable, Hashable {
  /// Encryption if both sides want it: here, always.
  case optional = 0
  /// Encryption required: here, always.
  case required = 1
  /// No encryption asked for: Ferry encrypts all the same.
  case none = 2
}
