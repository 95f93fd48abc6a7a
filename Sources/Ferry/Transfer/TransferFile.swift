/// One entry of an offer as the transfer core sees it, whatever front end offered it (the
/// Ferry wire's OFFER, a LocalSend upload request): a file with its size, an empty folder, or a
/// streamed file whose size is known only at its end. A value: used on any thread.
package struct TransferFile: Hashable, Sendable {
  /// What an entry is.
  package enum Kind: Hashable, Sendable {
    /// A regular file of ``TransferFile/size`` bytes.
    case file
    /// An empty folder to create: size 0, no data.
    case folder
    /// A file whose size is announced as 0 and is what arrives before its end (standard input
    /// read as it comes).
    case stream
  }

  /// The path relative to the receiver's destination, `/`-separated (checked by the receiver).
  package var path: String
  /// Size in bytes (0 for a folder and a stream).
  package var size: UInt64
  /// Modification time, seconds since 1970 (may be negative).
  package var modificationSeconds: Int64
  /// Nanoseconds part of the modification time (0..999 999 999).
  package var modificationNanoseconds: UInt32
  /// Permission bits, 0o7777 at most (the receiver applies only 0o777, never setuid, setgid or
  /// sticky).
  package var permissions: UInt32
  /// A file, a folder or a stream.
  package var kind: Kind

  /// Creates an entry.
  package init(
    path: String, size: UInt64, modificationSeconds: Int64, modificationNanoseconds: UInt32,
    permissions: UInt32, kind: Kind
  ) {
    self.path = path
    self.size = size
    self.modificationSeconds = modificationSeconds
    self.modificationNanoseconds = modificationNanoseconds
    self.permissions = permissions
    self.kind = kind
  }

  /// Whether this entry is an empty folder rather than a file.
  package var isFolder: Bool { kind == .folder }

  /// Whether this entry is a streamed file, whose size is known only when it ends.
  package var isStreamed: Bool { kind == .stream }
}
