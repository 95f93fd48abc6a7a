/// What happened to one sent file.
public struct FileResult: Hashable, Sendable {
  /// Its path at the receiver.
  public let path: String
  /// The receiver's verdict.
  public let status: FileStatus
  /// The receiver's reason when it is not `.stored`, as the peer sent it: escape it
  /// (``DisplayText/escaping(_:)``) before showing it.
  public let reason: String
  /// The SHA-256 of the whole file as sent (and verified by the receiver when `.stored`);
  /// empty when the file was skipped before it was read.
  public let sha256: [UInt8]

  /// ``sha256`` in lowercase hexadecimal, as `sha256sum` prints it.
  public var sha256Hex: String { Hex.lowercase(sha256) }
}
