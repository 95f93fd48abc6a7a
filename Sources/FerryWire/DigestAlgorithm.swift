/// The digest an offer's FILE_ENDs carry (docs/PROTOCOL.md, OFFER's digest byte). Pure.
package enum DigestAlgorithm: UInt8, Hashable, Sendable, CaseIterable {
  /// SHA-256: 32 bytes. The only digest of versions 1 and 2, and of an OFFER without the byte.
  case sha256 = 0
  /// XXH3-128, in xxHash's canonical big-endian form: 16 bytes. Version 3 and later.
  case xxh3 = 1

  /// The length of a digest, in bytes.
  package var size: Int {
    switch self {
    case .sha256: return 32
    case .xxh3: return 16
    }
  }
}
