/// The digest of a whole file, with the algorithm that made it.
public struct FileDigest: Hashable, Sendable {
  /// The algorithm: the sender's choice, carried in its offer.
  public let checksum: ChecksumAlgorithm
  /// The digest, ``ChecksumAlgorithm/digestSize`` bytes.
  public let bytes: [UInt8]

  /// ``bytes`` in lowercase hexadecimal, as `sha256sum` or `xxhsum -H2` prints it.
  public var hex: String { Hex.lowercase(bytes) }

  /// Wraps a digest made with `checksum`.
  public init(_ checksum: ChecksumAlgorithm, _ bytes: [UInt8]) {
    self.checksum = checksum
    self.bytes = bytes
  }
}
