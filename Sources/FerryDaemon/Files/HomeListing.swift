import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What a folder of the user's home holds, for the web page's file picker: never a folder
/// outside the home (symbolic links resolved first), never a name that is not UTF-8, hidden
/// names only when asked for, at most ``limit`` entries. Each entry's status is read without
/// following links: a link is `other` (a send does not follow it either). Any thread; reads
/// the disk.
package struct HomeListing: Sendable {
  /// One entry.
  package struct Entry: Sendable, Equatable {
    /// What it is.
    package enum Kind: String, Sendable {
      case file, folder, other
    }

    /// Its name.
    package let name: String
    /// What it is.
    package let kind: Kind
    /// A file's size.
    package let size: UInt64?
    /// When it was last changed.
    package let modified: Date?
  }

  /// Why a folder is not listed.
  package enum Refusal: Error, Sendable, Equatable {
    /// Not an absolute path without `.` and `..`.
    case malformed
    /// Outside the home folder (or led out of it by a link).
    case outside
    /// Not there, not a folder, or not readable: why.
    case unreadable(String)
  }

  /// The most entries listed.
  package static let limit = 5000
  /// The most names read from one folder (hidden and non-UTF-8 ones count): a folder of a
  /// million hidden names is not read to its end.
  package static let readLimit = 50_000

  /// The home folder, resolved.
  package let home: String

  /// The listing of `home` (resolved: its links followed).
  package init(home: String) {
    self.home = Self.resolved(home) ?? home
  }

  /// The user's home: `$HOME` when it is an absolute path, else the password database's.
  package static func userHome() -> String {
    if let home = ProcessInfo.processInfo.environment["HOME"], home.hasPrefix("/") {
      return home
    }
    return FileManager.default.homeDirectoryForCurrentUser.path
  }

  /// Lists `path` (nil: the home), its entries sorted, folders first; hidden ones with
  /// `hidden`. Returns the folder listed, resolved, with its entries and whether there were
  /// more than ``limit``.
  ///
  /// - Throws: ``Refusal``.
  package func list(_ path: String?, hidden: Bool) throws(Refusal) -> (
    path: String, entries: [Entry], truncated: Bool
  ) {
    let asked = path ?? home
    let parts = asked.split(separator: "/", omittingEmptySubsequences: true)
    guard asked.hasPrefix("/"), !parts.contains("."), !parts.contains(".."),
      !asked.utf8.contains(0)
    else { throw .malformed }
    guard let folder = Self.resolved(asked) else {
      throw .unreadable(String(cString: strerror(errno)))
    }
    guard folder == home || folder.hasPrefix(home == "/" ? "/" : home + "/") else {
      throw .outside
    }
    guard let stream = opendir(folder) else { throw .unreadable(String(cString: strerror(errno))) }
    defer { closedir(stream) }
    let fd = dirfd(stream)
    var entries: [Entry] = []
    var truncated = false
    var read = 0
    while let record = readdir(stream) {
      read += 1
      guard read <= Self.readLimit else {
        truncated = true
        break
      }
      let name = withUnsafeBytes(of: record.pointee.d_name) { raw -> String? in
        let bytes = raw.prefix { $0 != 0 }
        return String(validating: Array(bytes), as: UTF8.self)
      }
      guard let name, name != ".", name != "..", hidden || !name.hasPrefix(".") else { continue }
      guard entries.count < Self.limit else {
        truncated = true
        break
      }
      var status = stat()
      guard fstatat(fd, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
      let kind: Entry.Kind =
        switch status.st_mode & S_IFMT {
        case S_IFREG: .file
        case S_IFDIR: .folder
        default: .other
        }
      entries.append(
        Entry(
          name: name, kind: kind, size: kind == .file ? UInt64(status.st_size) : nil,
          modified: Date(timeIntervalSince1970: Double(status.st_mtim.tv_sec))))
    }
    entries.sort { a, b in
      (a.kind == .folder) != (b.kind == .folder)
        ? a.kind == .folder : Array(a.name.utf8).lexicographicallyPrecedes(Array(b.name.utf8))
    }
    return (folder, entries, truncated)
  }

  /// `path` with its links followed (realpath(3)); nil when it cannot be resolved.
  static func resolved(_ path: String) -> String? {
    guard let real = realpath(path, nil) else { return nil }
    defer { free(real) }
    return String(cString: real)
  }
}
