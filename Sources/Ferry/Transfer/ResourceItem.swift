import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One file to send — or an empty folder to create — where it is, and its path at the
/// receiver (relative, `/`-separated).
public struct ResourceItem: Hashable, Sendable {
  /// The file (or folder) on disk.
  public var url: URL
  /// Its path under the receiver's destination.
  public var path: String
  /// Whether this is an empty folder for the receiver to create (nothing of its contents is
  /// sent), rather than a file. A peer older than protocol version 3 is offered no folders.
  public var isFolder: Bool
  /// Whether this is a stream — a pipe, say, or standard input — read once, as it comes, to
  /// its end: its size is known only then, so the receiver is offered it with size unknown
  /// (protocol version 5) and it is never resumed or sent again after its first byte was read.
  public var isStreamed: Bool = false
  /// What a walk found of the file (``ResourceWalk``), so that offering it need not look again:
  /// the file is opened and compared with it before it is read all the same. Nil for an item
  /// made by hand.
  var metadata: Metadata?

  /// A file's size, time, permission bits and identity, as `stat(2)` gave them.
  struct Metadata: Sendable {
    let size: UInt64
    let modificationSeconds: Int64
    let modificationNanoseconds: UInt32
    let mode: UInt32
    let device: UInt64
    let inode: UInt64

    init(_ status: stat) {
      size = UInt64(max(0, status.st_size))
      modificationSeconds = Int64(status.st_mtim.tv_sec)
      modificationNanoseconds = UInt32(status.st_mtim.tv_nsec)
      mode = UInt32(status.st_mode & 0o777)
      device = UInt64(status.st_dev)
      inode = UInt64(status.st_ino)
    }
  }

  /// Items are equal when they name the same thing the same way (what a walk found of it aside).
  public static func == (lhs: ResourceItem, rhs: ResourceItem) -> Bool {
    lhs.url == rhs.url && lhs.path == rhs.path && lhs.isFolder == rhs.isFolder
      && lhs.isStreamed == rhs.isStreamed
  }

  /// Hashes what ``==`` compares.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(url)
    hasher.combine(path)
    hasher.combine(isFolder)
    hasher.combine(isStreamed)
  }

  /// A file and the path it gets at the receiver.
  public init(url: URL, path: String) {
    self.url = url
    self.path = path
    self.isFolder = false
  }

  /// A stream read from `url` (a pipe or FIFO, a socket, a terminal) to its end, as it comes,
  /// and received as one file at `path`; see ``isStreamed``. `/dev/stdin` is this process's
  /// standard input itself (never opened again, which for a pipe whose writer is gone would
  /// wait for ever); a FIFO is opened without waiting for its writer (the first read does).
  public init(streamingFrom url: URL, path: String) {
    self.url = url
    self.path = path
    self.isFolder = false
    self.isStreamed = true
  }

  /// An empty folder, created at `path` under the receiver's destination (its contents, if it
  /// has any, are not sent: walk it with ``expanding(_:skipped:)`` or ``ResourceWalk``).
  public init(folderAt url: URL, path: String) {
    self.url = url
    self.path = path
    self.isFolder = true
  }

  /// Something ``expanding(_:skipped:)`` left out of a folder, and why.
  public struct Skipped: Hashable, Sendable {
    /// Its path on disk.
    public var path: String
    /// Why: "a symbolic link (not followed)", "a named pipe", ….
    public var reason: String
    /// Whether it was left out because it could not be read (``ResourceWalk``'s
    /// `skippingUnreadable`), rather than for what it is: what was meant to go did not.
    public var unreadable: Bool = false
  }

  /// Expands files and directories into items: a file keeps its name; a directory contributes
  /// every regular file below it as `dirname/relative/path`, and every folder with nothing to
  /// send below it as an empty-folder item (``init(folderAt:path:)``). Symbolic links, pipes,
  /// sockets and devices inside directories are left out and reported to `skipped` (a file
  /// named directly is read through its link).
  ///
  /// - Throws: ``ResourceError/cannotRead(_:)`` for a missing or unreadable path, a path that
  ///   is neither a regular file nor a directory, or a name inside a folder that is not UTF-8
  ///   (it could not be named to the receiver).
  public static func expanding(
    _ urls: [URL], skipped: (Skipped) -> Void = { _ in }
  ) throws(ResourceError) -> [ResourceItem] {
    var items: [ResourceItem] = []
    for url in urls {
      var status = stat()
      guard stat(url.path, &status) == 0 else {
        throw .cannotRead("\(url.path): \(errnoText().lowercased())")
      }
      let base = url.standardizedFileURL.lastPathComponent
      switch status.st_mode & S_IFMT {
      case S_IFREG:
        items.append(ResourceItem(url: url, path: base))
      case S_IFDIR:
        var found: [ResourceItem] = []
        if try !walk(url.path, relative: base, into: &found, skipped: skipped) {
          found.append(ResourceItem(folderAt: url, path: base))
        }
        items += found.sorted { $0.path < $1.path }
      case let kind:
        throw .cannotRead("\(url.path): \(fileKind(kind)), not a regular file or folder")
      }
    }
    return items
  }

  /// Checks `items` as the receiver will before any peer is asked, so that a bad offer fails
  /// here with a clear error instead of being refused after it was accepted: every path is a
  /// valid ``RelativePath``; no path is offered twice (the same file named twice is kept once);
  /// no path is both a file and a folder; every file is a regular file and every folder item
  /// a folder (a streamed item may be anything but a folder, and is not opened here); at most
  /// ``ProtocolLimits/maximumFilesPerOffer``.
  ///
  /// - Returns: `items` without repeats of the same file under the same path.
  /// - Throws: ``ResourceError/unsafePath(_:)``, ``ResourceError/cannotRead(_:)``,
  ///   ``ResourceError/tooManyFiles(_:)`` or ``ResourceError/tooLarge(_:)`` (more than 2^62
  ///   bytes in all).
  public static func checked(_ items: [ResourceItem]) throws(ResourceError) -> [ResourceItem] {
    var kept: [ResourceItem] = []
    var paths: [RelativePath] = []
    var identities: [String: (device: UInt64, inode: UInt64)] = [:]
    var total: UInt64 = 0
    for item in items {
      let path: RelativePath
      do {
        path = try RelativePath(validating: item.path)
      } catch {
        throw .unsafePath(error)
      }
      // Found by a walk a moment ago: readable, a regular file, of this size.
      if let found = item.metadata, !item.isFolder, !item.isStreamed {
        let identity = (device: found.device, inode: found.inode)
        if let earlier = identities[item.path] {
          if earlier == identity { continue }
          throw .unsafePath(.duplicate(escaped(item.path, keepingUnicode: true)))
        }
        identities[item.path] = identity
        total += found.size
        guard total <= ProtocolLimits.maximumOfferBytes else {
          throw .tooLarge(
            escaped(item.url.path, keepingUnicode: true) + " (with the files before it)")
        }
        kept.append(item)
        paths.append(path)
        continue
      }
      var status = stat()
      guard stat(item.url.path, &status) == 0 else {
        throw .cannotRead("\(item.url.path): \(errnoText().lowercased())")
      }
      if item.isStreamed {
        // Read as it comes, once: nothing to probe (opening a FIFO could block), no size yet.
        guard status.st_mode & S_IFMT != S_IFDIR else {
          throw .cannotRead("\(item.url.path): a folder, not something to read")
        }
        guard identities[item.path] == nil else {
          throw .unsafePath(.duplicate(escaped(item.path, keepingUnicode: true)))
        }
        identities[item.path] = (device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        kept.append(item)
        paths.append(path)
        continue
      }
      guard status.st_mode & S_IFMT == (item.isFolder ? S_IFDIR : S_IFREG) else {
        throw .cannotRead(
          "\(item.url.path): \(fileKind(status.st_mode & S_IFMT)), not a regular "
            + (item.isFolder ? "folder" : "file"))
      }
      // Readable now, before anyone is asked, not found out after the receiver said yes.
      let probe = open(item.url.path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
      guard probe >= 0 else {
        throw .cannotRead("\(item.url.path): \(errnoText().lowercased())")
      }
      close(probe)
      let identity = (device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
      if let earlier = identities[item.path] {
        if earlier == identity { continue }  // The same file, named twice.
        throw .unsafePath(.duplicate(escaped(item.path, keepingUnicode: true)))
      }
      identities[item.path] = identity
      // Each size is below 2^63 and the total below 2^62 before it: the sum cannot overflow.
      total += item.isFolder ? 0 : UInt64(max(0, status.st_size))
      guard total <= ProtocolLimits.maximumOfferBytes else {
        throw .tooLarge(
          escaped(item.url.path, keepingUnicode: true) + " (with the files before it)")
      }
      kept.append(item)
      paths.append(path)
    }
    guard kept.count <= ProtocolLimits.maximumFilesPerOffer else { throw .tooManyFiles(kept.count) }
    do {
      try RelativePath.checkTree(paths)
    } catch {
      throw .unsafePath(error)
    }
    return kept
  }
}

/// Appends every regular file below `directory` (symbolic links are not followed), and every
/// folder with nothing to send below it as an empty folder; returns whether it appended
/// anything.
private func walk(
  _ directory: String, relative: String, into items: inout [ResourceItem],
  skipped: (ResourceItem.Skipped) -> Void
) throws(ResourceError) -> Bool {
  let before = items.count
  guard let stream = opendir(directory) else {
    throw .cannotRead("\(directory): \(errnoText().lowercased())")
  }
  defer { closedir(stream) }
  let fd = dirfd(stream)
  while let entry = readdir(stream) {
    guard let name = try entryName(entry, in: directory) else { continue }
    var status = stat()
    guard fstatat(fd, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else {
      throw .cannotRead("\(directory)/\(name): \(errnoText().lowercased())")
    }
    switch status.st_mode & S_IFMT {
    case S_IFREG:
      items.append(
        ResourceItem(
          url: URL(fileURLWithPath: directory + "/" + name, isDirectory: false),
          path: relative + "/" + name))
    case S_IFDIR:
      let (folder, path) = (directory + "/" + name, relative + "/" + name)
      if try !walk(folder, relative: path, into: &items, skipped: skipped) {
        items.append(
          ResourceItem(folderAt: URL(fileURLWithPath: folder, isDirectory: true), path: path))
      }
    case let kind:
      skipped(ResourceItem.Skipped(path: directory + "/" + name, reason: fileKind(kind)))
    }
  }
  return items.count > before
}

/// The name of folder entry `entry` read from `directory`; nil for `.` and `..`.
///
/// - Throws: ``ResourceError/cannotRead(_:)`` for a name that is not UTF-8 (it could not be
///   named to the receiver).
func entryName(_ entry: UnsafeMutablePointer<dirent>, in directory: String) throws(ResourceError)
  -> String?
{
  let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
  guard let name = String(validating: bytes, as: UTF8.self) else {
    let shown = escaped(String(decoding: bytes, as: UTF8.self), keepingUnicode: true)
    throw .cannotRead(
      "\(directory)/\(shown): the name is not valid UTF-8, so it cannot be named to the "
        + "receiver; rename it (e.g. with convmv) or leave it out")
  }
  return name == "." || name == ".." ? nil : name
}

/// What a file of type `kind` (`st_mode & S_IFMT`) is, in words.
func fileKind(_ kind: mode_t) -> String {
  switch kind {
  case S_IFLNK: return "a symbolic link (not followed)"
  case S_IFIFO: return "a named pipe"
  case S_IFSOCK: return "a socket"
  case S_IFCHR, S_IFBLK: return "a device"
  case S_IFDIR: return "a folder"
  default: return "a special file"
  }
}
