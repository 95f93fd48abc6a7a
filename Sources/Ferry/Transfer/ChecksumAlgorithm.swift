/// The digest that checks each file end to end: the sender's choice, carried in the offer and
/// used by both sides (docs/SECURITY.md, "File integrity").
///
/// TLS already authenticates every byte on the wire; the digest guards what TLS cannot see —
/// the disks, the programs at both ends and a resume's staged prefix. XXH3-128 does that
/// about twenty times faster than SHA-256; SHA-256 is for users who compare with `sha256sum`.
/// A peer that speaks only protocol version 2 or older gets SHA-256 whatever was asked.
public enum ChecksumAlgorithm: String, Hashable, Sendable, CaseIterable {
  /// XXH3-128 (xxHash 0.8), 16 bytes, as `xxhsum -H2` prints it. The default.
  case xxh3 = "xxh3-128"
  /// SHA-256, 32 bytes, as `sha256sum` prints it.
  case sha256

  /// The length of a digest, in bytes.
  public var digestSize: Int {
    switch self {
    case .xxh3: return 16
    case .sha256: return 32
    }
  }
}
