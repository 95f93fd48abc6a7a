import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The files below some entries, one at a time, in memory bounded by the deepest path and the
/// largest folder — never by how many files there are: how a tree of any size is offered as
/// consecutive offers (``Session/sendResources(_:to:)`` takes at most
/// ``ProtocolLimits/maximumFilesPerOffer`` files at once).
///
/// Each entry is a file (found as itself, as is a streamed item, with size 0), an empty folder
/// to create (``ResourceItem/init(folderAt:path:)``: found as itself, never walked into), or a
/// folder (every regular file below it, as
/// `entry.path/relative/path`; each folder's names in byte order, a folder's files before the
/// next name's; a folder with nothing to send below it is found as an empty folder,
/// ``ResourceItem/isFolder``, once its names are walked). Symbolic links, pipes, sockets and devices inside folders are left out and
/// reported; an entry named directly is read through its link, as ``ResourceItem/expanding(_:skipped:)``
/// does. With `skippingUnreadable`, files and folders inside folders that this user may not
/// read are left out and reported too (``ResourceItem/Skipped/unreadable``). Every path found
/// is checked as the receiver will check it (``RelativePath``), and two names of one folder
/// that are the same name in another spelling (precomposed `é` and `e` + U+0301) are refused,
/// as the receiver would refuse them. Entries must not overlap one another (check them with
/// ``ResourceItem/checked(_:)`` first, as folders).
///
/// Not thread-safe: one walker per task. Walking twice reads the disk twice.
public struct ResourceWalk {
  /// A file found: what to offer and the size it has now.
  public struct Found: Sendable {
    /// The file and its path at the receiver.
    public let item: ResourceItem
    /// Its size in bytes when it was found.
    public let size: UInt64
  }

  /// A folder's descriptor, open while the folder is walked: its names are looked up relative
  /// to it (no path walked again from the root per name). Closed with its last reference.
  private final class FolderHandle {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { close(fd) }
  }

  /// A folder being read: its names (sorted), and which comes next.
  private struct Folder {
    let handle: FolderHandle
    let directory: String
    let relative: String
    let names: [String]
    var next = 0
    /// Whether anything below it was found (else it is found itself, as an empty folder).
    var found = false
  }

  private var entries: IndexingIterator<[ResourceItem]>
  private var stack: [Folder] = []
  /// Whether a file or folder inside a folder that cannot be read for want of permission is
  /// left out (and reported) rather than the walk's failure.
  private let skipsUnreadable: Bool

  /// A walk of `entries`, each a file or a folder, offered under its ``ResourceItem/path``.
  /// `skippingUnreadable`: a file or folder *inside* a folder that this user may not read
  /// (permission denied) is left out and reported to `skipped`, as `rsync` leaves it out; an
  /// entry itself that cannot be read is still the walk's failure.
  public init(_ entries: [ResourceItem], skippingUnreadable: Bool = false) {
    self.entries = entries.makeIterator()
    self.skipsUnreadable = skippingUnreadable
  }

  /// The next file, or nil when every entry is walked.
  ///
  /// - Parameter skipped: Told of each thing inside a folder that is not a file or folder (and,
  ///   with `skippingUnreadable`, of each one that cannot be read).
  /// - Throws: ``ResourceError/cannotRead(_:)`` for an entry or folder that cannot be read, a
  ///   name that is not UTF-8 or an unreadable file; ``ResourceError/unsafePath(_:)`` for a
  ///   path the receiver would refuse.
  public mutating func next(
    skipped: (ResourceItem.Skipped) -> Void = { _ in }
  ) throws(ResourceError) -> Found? {
    while true {
      if stack.isEmpty {
        guard let entry = entries.next() else { return nil }
        if entry.isStreamed {
          // Read as it comes when it is sent: nothing to stat, no size yet.
          do {
            _ = try RelativePath(validating: entry.path)
          } catch {
            throw .unsafePath(error)
          }
          return Found(item: entry, size: 0)
        }
        var status = stat()
        guard stat(entry.url.path, &status) == 0 else {
          throw .cannotRead("\(entry.url.path): \(errnoText().lowercased())")
        }
        if entry.isFolder {
          // An empty folder to create (``ResourceItem/init(folderAt:path:)``): found as itself,
          // never walked into — what it holds now was not offered.
          guard status.st_mode & S_IFMT == S_IFDIR else {
            throw .cannotRead("\(entry.url.path): no longer a folder")
          }
          do {
            _ = try RelativePath(validating: entry.path)
          } catch {
            throw .unsafePath(error)
          }
          return Found(item: entry, size: 0)
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
          return try found(entry.url.path, path: entry.path, status: status)
        case S_IFDIR:
          // Named directly: one that cannot be listed and entered is the walk's failure, not
          // a folder whose every entry is left out.
          guard access(entry.url.path, R_OK | X_OK) == 0 else {
            throw .cannotRead("\(entry.url.path): \(errnoText().lowercased())")
          }
          try push(entry.url.path, relative: entry.path)
          continue
        case let kind:
          throw .cannotRead("\(entry.url.path): \(fileKind(kind)), not a regular file or folder")
        }
      }
      let top = stack.count - 1
      guard stack[top].next < stack[top].names.count else {
        // The folder, or something below it, is found: its parent has something to send.
        let done = stack.removeLast()
        if !stack.isEmpty { stack[stack.count - 1].found = true }
        if done.found { continue }
        return try foundFolder(done)
      }
      let folder = stack[top]
      let name = folder.names[folder.next]
      stack[top].next += 1
      let onDisk = folder.directory + "/" + name
      let fd = folder.handle.fd
      var status = stat()
      guard fstatat(fd, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else {
        // Gone since the folder was read: not there to send.
        if errno == ENOENT || leftOut(onDisk, skipped) { continue }
        throw .cannotRead("\(onDisk): \(errnoText().lowercased())")
      }
      switch status.st_mode & S_IFMT {
      case S_IFREG:
        // Readable now, before anyone is asked, not found out after the receiver said yes.
        if faccessat(fd, name, R_OK, 0) != 0 {
          if leftOut(onDisk, skipped) { continue }
          throw .cannotRead("\(onDisk): \(errnoText().lowercased())")
        }
        let file = try found(
          onDisk, path: folder.relative + "/" + name, status: status, readable: true)
        stack[top].found = true
        return file
      case S_IFDIR:
        // Listed and walked into: both need permission.
        if faccessat(fd, name, R_OK | X_OK, 0) != 0, leftOut(onDisk, skipped) { continue }
        try push(onDisk, relative: folder.relative + "/" + name)
      case let kind:
        skipped(ResourceItem.Skipped(path: onDisk, reason: fileKind(kind)))
      }
    }
  }

  /// Whether `onDisk`, inside a folder, is left out for the error in `errno` rather than be the
  /// walk's failure: permission denied, when the walk skips what it cannot read (`skipped` is
  /// told). `errno` is kept for the caller otherwise.
  private func leftOut(_ onDisk: String, _ skipped: (ResourceItem.Skipped) -> Void) -> Bool {
    let error = errno
    guard skipsUnreadable, error == EACCES || error == EPERM else { return false }
    let reason = "unreadable (\(String(cString: strerror(error)).lowercased()))"
    skipped(ResourceItem.Skipped(path: onDisk, reason: reason, unreadable: true))
    return true
  }

  /// A file to offer, checked as the receiver will check its path, and readable (`readable`:
  /// looked at already); what its `status` says of it goes with it, so that offering it need
  /// not look again.
  private func found(_ onDisk: String, path: String, status: stat, readable: Bool = false)
    throws(ResourceError) -> Found
  {
    do {
      _ = try RelativePath(validating: path)
    } catch {
      throw .unsafePath(error)
    }
    // Readable now, before anyone is asked, not found out after the receiver said yes.
    guard readable || access(onDisk, R_OK) == 0 else {
      throw .cannotRead("\(onDisk): \(errnoText().lowercased())")
    }
    var item = ResourceItem(url: URL(fileURLWithPath: onDisk, isDirectory: false), path: path)
    item.metadata = ResourceItem.Metadata(status)
    return Found(item: item, size: UInt64(max(0, status.st_size)))
  }

  /// A folder with nothing found below it, to be created empty; checked as ``found(_:path:status:)``
  /// checks a file.
  private func foundFolder(_ folder: Folder) throws(ResourceError) -> Found {
    do {
      _ = try RelativePath(validating: folder.relative)
    } catch {
      throw .unsafePath(error)
    }
    return Found(
      item: ResourceItem(
        folderAt: URL(fileURLWithPath: folder.directory, isDirectory: true),
        path: folder.relative),
      size: 0)
  }

  /// Reads folder `directory`'s names, sorted by their bytes, to walk them next.
  private mutating func push(_ directory: String, relative: String) throws(ResourceError) {
    guard stack.count < RelativePath.maximumDepth else {
      throw .unsafePath(.tooDeep(escaped(relative, keepingUnicode: true)))
    }
    let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw .cannotRead("\(directory): \(errnoText().lowercased())") }
    let handle = FolderHandle(fd)
    let listing = dup(fd)
    guard listing >= 0, let stream = fdopendir(listing) else {
      if listing >= 0 { close(listing) }
      throw .cannotRead("\(directory): \(errnoText().lowercased())")
    }
    defer { closedir(stream) }
    var names: [String] = []
    var spellings = Set<String>()
    while let entry = readdir(stream) {
      guard let name = try entryName(entry, in: directory) else { continue }
      // String equality is canonical equivalence: two spellings of one name collide here.
      guard spellings.insert(name).inserted else {
        throw .unsafePath(.duplicate(escaped(relative + "/" + name, keepingUnicode: true)))
      }
      names.append(name)
    }
    names.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    stack.append(Folder(handle: handle, directory: directory, relative: relative, names: names))
  }
}
