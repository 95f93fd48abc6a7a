import Ferry
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One daemon per Ferry home: an exclusive flock(2) on `daemon.lock` in it, taken before
/// anything else (a second daemon would rewrite the first one's outbox, and both would deliver
/// it), held until the process ends. The file holds the pid of the daemon that holds it.
package enum DaemonLock {
  /// Why the lock was not taken.
  package enum Failure: Error, Sendable, CustomStringConvertible {
    /// Another daemon holds it (its pid, when the file says).
    case held(path: String, pid: Int32?)
    /// The file cannot be made.
    case unusable(path: String, reason: String)

    package var description: String {
      switch self {
      case .held(let path, let pid):
        "another ferry daemon runs for this home"
          + (pid.map { " (pid \($0))" } ?? "") + ": \(path) is locked"
      case .unusable(let path, let reason): "cannot lock \(path): \(reason)"
      }
    }
  }

  /// The pid of the daemon that holds the lock of `home`, if one does (0 when its file does
  /// not say). Blocking file I/O.
  package static func holder(in home: URL) -> Int32? {
    let path = home.appendingPathComponent("daemon.lock").path
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    guard flock(fd, LOCK_SH | LOCK_NB) != 0 else {
      flock(fd, LOCK_UN)
      return nil
    }
    var bytes = [UInt8](repeating: 0, count: 32)
    let count = pread(fd, &bytes, bytes.count, 0)
    return count > 0 ? Int32(String(decoding: bytes[..<count], as: UTF8.self)) ?? 0 : 0
  }

  /// Takes the lock of `home` for the rest of the process: tried for 200 ms (a `ferry
  /// receive` looking for a daemon holds it shared for a moment). Blocking.
  ///
  /// - Throws: ``Failure``.
  package static func take(in home: URL) throws(Failure) {
    let path = home.appendingPathComponent("daemon.lock").path
    do {
      try FerryHome.prepare(home)
    } catch {
      throw .unusable(path: path, reason: error.description)
    }
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw .unusable(path: path, reason: String(cString: strerror(errno))) }
    var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
    for _ in 0..<10 where !locked {
      usleep(20_000)
      locked = flock(fd, LOCK_EX | LOCK_NB) == 0
    }
    guard locked else {
      var bytes = [UInt8](repeating: 0, count: 32)
      let count = pread(fd, &bytes, bytes.count, 0)
      close(fd)
      let pid = count > 0 ? Int32(String(decoding: bytes[..<count], as: UTF8.self)) : nil
      throw .held(path: path, pid: pid)
    }
    let pid = Array("\(getpid())".utf8)
    _ = ftruncate(fd, 0)
    _ = pwrite(fd, pid, pid.count, 0)
    // Held open, and so locked, until the process ends.
  }
}
