/// One file in an OFFER.
package struct OfferedFile: Hashable, Sendable {
  /// The path relative to the receiver's destination, `/`-separated (checked by the receiver).
  package var path: String
  /// Size in bytes.
  package var size: UInt64
  /// Modification time, seconds since 1970 (may be negative).
  package var modificationSeconds: Int64
  /// Nanoseconds part of the modification time (0..999 999 999).
  package var modificationNanoseconds: UInt32
  /// Permission bits (0o7777 at most on the wire; the receiver applies only 0o777, never
  /// setuid, setgid or sticky), plus ``folderBit`` for an empty folder (version 3) or
  /// ``streamBit`` for a file whose size is known only at its end (version 5).
  package var mode: UInt32

  /// The mode bit (S_IFDIR) that makes an entry an empty folder to create: size 0, no data.
  package static let folderBit: UInt32 = 0o040000

  /// The mode bit (S_IFIFO) that makes an entry a streamed file: its size is announced as 0
  /// and is what arrives before its FILE_END (standard input read as it comes). Version 5.
  package static let streamBit: UInt32 = 0o010000

  /// Whether this entry is an empty folder rather than a file.
  package var isFolder: Bool { mode & Self.folderBit != 0 }

  /// Whether this entry is a streamed file, whose size is known only when it ends.
  package var isStreamed: Bool { mode & Self.streamBit != 0 }

  /// Creates a file entry.
  package init(
    path: String, size: UInt64, modificationSeconds: Int64, modificationNanoseconds: UInt32,
    mode: UInt32
  ) {
    self.path = path
    self.size = size
    self.modificationSeconds = modificationSeconds
    self.modificationNanoseconds = modificationNanoseconds
    self.mode = mode
  }
}
