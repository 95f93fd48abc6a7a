import Foundation

/// Reads the first `length` bytes of `fd` with pread(2), 1 MiB at a time, into `hasher`.
/// Returns false when the file ends sooner or cannot be read (errno says which: 0 for a short
/// file), or when `proceed` (asked before each MiB) says to stop.
func hashPrefix(
  of fd: Int32, length: UInt64, into hasher: inout ContentHasher,
  while proceed: () -> Bool = { true }
) -> Bool {
  var buffer = [UInt8](repeating: 0, count: Int(min(length, 1 << 20)))
  var position: UInt64 = 0
  while position < length {
    guard proceed() else { return false }
    let want = Int(min(UInt64(buffer.count), length - position))
    let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(position)) }
    if count < 0 && errno == EINTR { continue }
    guard count > 0 else {
      if count == 0 { errno = 0 }
      return false
    }
    buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    position += UInt64(count)
  }
  return true
}

extension TransferFile {
  /// Whether `status` has this file's size and modification time (to the nanosecond): what a
  /// file must still have to be the one offered.
  func hasSizeAndTime(of status: stat) -> Bool {
    UInt64(status.st_size) == size && Int64(status.st_mtim.tv_sec) == modificationSeconds
      && UInt32(status.st_mtim.tv_nsec) == modificationNanoseconds
  }
}

/// The digest, with `algorithm`, of the first `length` bytes of the file at `path` — what a
/// sender announces before it sends those bytes — read with ``hashPrefix(of:length:into:while:)``.
/// Any thread; it blocks on the file.
///
/// - Throws: ``FileReadingError`` when the file cannot be opened or read, or ends sooner.
package func fileDigest(atPath path: String, length: UInt64, _ algorithm: ChecksumAlgorithm)
  throws(FileReadingError) -> [UInt8]
{
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { throw FileReadingError(path: path, errno: errno) }
  defer { close(fd) }
  var hasher = ContentHasher(algorithm)
  guard hashPrefix(of: fd, length: length, into: &hasher) else {
    throw FileReadingError(path: path, errno: errno)
  }
  return hasher.finalize()
}

/// A file that could not be read for its digest: its path, and the system's words (or "it is
/// shorter than it was" for a file that ended sooner).
package struct FileReadingError: Error, CustomStringConvertible {
  /// The file.
  package let path: String
  /// Why: the system's words.
  package let reason: String

  init(path: String, errno code: Int32) {
    self.path = path
    reason = code == 0 ? "it is shorter than it was" : String(cString: strerror(code))
  }

  /// `PATH: reason`.
  package var description: String { "\(path): \(reason)" }
}
