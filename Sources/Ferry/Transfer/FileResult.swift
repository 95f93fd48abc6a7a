/// What happened to one sent file.
public struct FileResult: Hashable, Sendable {
  /// Its path at the receiver.
  public let path: String
  /// The receiver's verdict.
  public let status: FileStatus
  /// The receiver's reason when it is not `.stored`, as the peer sent it: escape it
  /// (``DisplayText/escaping(_:)``) before showing it.
  public let reason: String
  /// The digest of the whole file as sent, with ``checksum`` (and verified by the receiver
  /// when `.stored`); empty when the file was skipped before it was read.
  public let digest: [UInt8]
  /// The algorithm of ``digest``: the one asked for, or SHA-256 with a peer older than
  /// protocol version 3.
  public let checksum: ChecksumAlgorithm

  /// ``digest`` in lowercase hexadecimal, as `sha256sum` or `xxhsum -H2` prints it.
  public var digestHex: String { Hex.lowercase(digest) }
}
