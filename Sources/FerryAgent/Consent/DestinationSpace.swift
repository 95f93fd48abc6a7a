import Ferry
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// How much room a destination folder has, so that an offer too large for it is declined
/// before anyone is asked rather than failing after "Accepted".
public struct DestinationSpace: Sendable {
  /// The folder.
  public let url: URL

  /// The room of the folder at `url`.
  public init(_ url: URL) {
    self.url = url
  }

  /// Bytes this user may still write on the folder's filesystem; nil if unknown.
  public var availableBytes: UInt64? {
    var status = statvfs()
    guard statvfs(url.path, &status) == 0 else { return nil }
    let (bytes, overflow) = UInt64(status.f_bavail).multipliedReportingOverflow(
      by: UInt64(status.f_frsize))
    return overflow ? .max : bytes
  }

  /// Bytes already staged in `.ferry-partial` (a resumed batch needs only the rest).
  public var stagedBytes: UInt64 {
    let staging = url.appendingPathComponent(".ferry-partial").path
    guard let directory = opendir(staging) else { return 0 }
    defer { closedir(directory) }
    var total: UInt64 = 0
    var seen = 0
    // Bounded: a staging folder is a few hundred entries; this is an estimate.
    while seen < 100_000, let entry = readdir(directory) {
      seen += 1
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      guard name.hasSuffix(".part") else { continue }
      var status = stat()
      if fstatat(dirfd(directory), name, &status, AT_SYMLINK_NOFOLLOW) == 0 {
        total &+= UInt64(max(status.st_size, 0))
      }
    }
    return total
  }

  /// Why an offer of `bytes` cannot fit (words the sender is given), or nil when it can (or
  /// the room is unknown).
  public func lackOfSpace(for bytes: UInt64) -> String? {
    guard let available = availableBytes else { return nil }
    let (room, overflow) = available.addingReportingOverflow(stagedBytes)
    guard !overflow, bytes > room else { return nil }
    return "not enough space: \(Quantity.bytes(bytes)) offered, \(Quantity.bytes(available)) free"
  }
}
