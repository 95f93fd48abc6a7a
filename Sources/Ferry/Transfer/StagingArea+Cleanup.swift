import CFerrySystem
import Crypto
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Cleaning the staging directory up: stale staged files, and the directory once it is empty.
extension StagingArea {
  /// Removes what this class leaves in the staging directory and nobody resumed for `age`:
  /// `.part` files (unless an offer holds them) and `.meta` files, and `.meta` files whose
  /// staged file is gone; a streamed file's `.stream.part`, which nothing can resume, at any
  /// age. Files handed over (`.received`) are the application's and stay.
  /// Returns how many staged files were removed and their bytes.
  @discardableResult
  func removeStale(olderThan age: Duration) -> (files: Int, bytes: UInt64) {
    var removed: (files: Int, bytes: UInt64) = (0, 0)
    guard let entries = names() else { return removed }
    let present = Set(entries)
    let limit = Int(Date().timeIntervalSince1970) - Int(age.components.seconds)
    for entry in entries {
      let isPart = entry.hasSuffix(Self.partSuffix)
      let isMeta = entry.hasSuffix(Self.partSuffix + Self.metaSuffix)
      guard isPart || isMeta else { continue }
      var status = stat()
      guard fstatat(fd, entry, &status, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
      let stale =
        status.st_mtim.tv_sec < limit || entry.hasSuffix(Self.streamSuffix + Self.partSuffix)
      if isMeta {
        let part = String(entry.dropLast(Self.metaSuffix.count))
        if stale || !present.contains(part) { unlinkat(fd, entry, 0) }
      } else if stale, !StagingClaims.shared.isClaimed(identity + "/" + entry),
        !isLockedElsewhere(entry)
      {
        remove(entry)
        removed.files += 1
        removed.bytes += UInt64(max(status.st_size, 0))
      }
    }
    return removed
  }

  /// Whether another process holds the lock of staged file `name` (it is receiving it).
  private func isLockedElsewhere(_ name: String) -> Bool {
    let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    guard file >= 0 else { return false }
    defer { close(file) }
    guard flock(file, LOCK_EX | LOCK_NB) == 0 else { return true }
    flock(file, LOCK_UN)
    return false
  }

  /// Removes the staging directory if it is empty and no other offer of this process uses it
  /// (one accepted a moment ago may not have created its first file yet).
  func removeIfEmpty() {
    guard StagingClaims.shared.users(of: identity) <= 1 else { return }
    let root = Glibc.open(destination.root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard root >= 0 else { return }
    unlinkat(root, Self.directoryName, AT_REMOVEDIR)
    close(root)
  }
}
