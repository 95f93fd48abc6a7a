import Foundation

/// Writes files so that a reader sees either the old content or the new, never a mix: a
/// temporary file in the same directory, created with its final mode, written, fsync'd and
/// renamed over the target with rename(2), then the directory fsync'd.
package enum AtomicFile {
  /// Replaces `path` with `bytes`, creating it with `mode`.
  ///
  /// - Throws: The `errno` of the first failing call, as `POSIXError`.
  package static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws {
    let directory = (path as NSString).deletingLastPathComponent
    let temporary =
      "\(directory)/.\((path as NSString).lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
    guard fd >= 0 else { throw POSIXError.current }
    var done = false
    defer {
      if !done { unlink(temporary) }
    }
    do {
      defer { close(fd) }
      // The umask may have narrowed the mode at creation; set it exactly.
      guard fchmod(fd, mode) == 0 else { throw POSIXError.current }
      var offset = 0
      while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes {
          Foundation.write(fd, $0.baseAddress, $0.count)
        }
        if written < 0 {
          if errno == EINTR { continue }
          throw POSIXError.current
        }
        offset += written
      }
      guard fsync(fd) == 0 else { throw POSIXError.current }
    }
    guard rename(temporary, path) == 0 else { throw POSIXError.current }
    done = true
    // The rename is durable once the directory is flushed: a failure here is reported like
    // any other, since the caller's file may not survive a crash.
    let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard directoryFD >= 0 else { throw POSIXError.current }
    defer { close(directoryFD) }
    guard fsync(directoryFD) == 0 else { throw POSIXError.current }
  }

  /// Runs `body` holding an exclusive flock(2) on `lockPath` (created 0600 if missing), so that
  /// processes sharing a directory do not interleave read-modify-write cycles.
  package static func withLock<T>(_ lockPath: String, _ body: () throws -> T) throws -> T {
    let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw POSIXError.current }
    defer { close(fd) }
    while flock(fd, LOCK_EX) != 0 {
      guard errno == EINTR else { throw POSIXError.current }
    }
    defer { flock(fd, LOCK_UN) }
    return try body()
  }
}

extension POSIXError {
  /// The error for the current `errno`.
  package static var current: POSIXError {
    POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
  }
}
