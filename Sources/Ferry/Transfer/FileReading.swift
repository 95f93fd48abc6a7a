import FerryWire
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

extension OfferedFile {
  /// Whether `status` has this file's size and modification time (to the nanosecond): what a
  /// file must still have to be the one offered.
  func hasSizeAndTime(of status: stat) -> Bool {
    UInt64(status.st_size) == size && Int64(status.st_mtim.tv_sec) == modificationSeconds
      && UInt32(status.st_mtim.tv_nsec) == modificationNanoseconds
  }
}
