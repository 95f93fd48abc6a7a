import CFerrySystem
import Foundation

/// A destination directory that files are placed into without ever following a symbolic link
/// below it: every step opens the next directory with `O_NOFOLLOW | O_DIRECTORY` relative to the
/// previous one, and files are created and renamed with the *at() calls. A symlink planted in
/// the destination (`DEST/docs -> /etc`) therefore makes the placement fail instead of writing
/// outside.
struct ConfinedDirectory {
  /// The destination.
  let root: URL

  /// Opens (creating if needed, mode 0755) the directory for `components` under the root and
  /// returns its descriptor; the caller closes it.
  ///
  /// - Throws: ``ResourceError/unsafeDestination(_:)`` when a component is a symlink or not a
  ///   directory; ``ResourceError/cannotWrite(_:)`` for other failures.
  func openDirectory(_ components: ArraySlice<String>, create: Bool) throws(ResourceError) -> Int32
  {
    var fd = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw .cannotWrite("\(root.path): \(errnoText())") }
    var walked = root.path
    for component in components {
      walked += "/" + component
      // RelativePath guarantees single, ordinary names; checked again here because this is
      // where a name reaches the kernel.
      guard Self.isSingleName(component) else {
        close(fd)
        throw .unsafeDestination("\(escaped(walked, keepingUnicode: true)) is not a single name")
      }
      if create && mkdirat(fd, component, 0o755) != 0 && errno != EEXIST {
        let reason = errnoText()
        close(fd)
        throw .cannotWrite("\(walked): \(reason)")
      }
      let next = openat(fd, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
      let failure = errno
      close(fd)
      guard next >= 0 else {
        if failure == ELOOP || failure == ENOTDIR {
          throw .unsafeDestination("\(walked) is a symbolic link or not a directory")
        }
        throw .cannotWrite("\(walked): \(String(cString: strerror(failure)))")
      }
      fd = next
    }
    return fd
  }

  /// Moves the file `name` in directory `from` to `path` under the root, with rename(2) (atomic,
  /// same filesystem), applying `policy` when something is already there.
  ///
  /// - Returns: Where the file landed, or nil when `policy` is `.skip` and the name was taken.
  /// - Throws: ``ResourceError`` when the destination is unsafe or cannot be written.
  func place(
    _ name: String, from: Int32, at path: RelativePath, policy: ConflictPolicy
  ) throws(ResourceError) -> URL? {
    let directory = try openDirectory(path.components.dropLast(), create: true)
    defer { close(directory) }
    return try place(name, from: from, at: path, policy: policy, in: directory)
  }

  /// ``place(_:from:at:policy:)`` into `directory`, the folder of `path` already opened with
  /// ``openDirectory(_:create:)`` (the caller keeps and closes it).
  func place(
    _ name: String, from: Int32, at path: RelativePath, policy: ConflictPolicy, in directory: Int32
  ) throws(ResourceError) -> URL? {
    let parents = path.components.dropLast()
    let parentPath = parents.reduce(root.path) { $0 + "/" + $1 }
    var target = path.fileName
    guard Self.isSingleName(target) else {
      throw .unsafeDestination(
        "\(escaped(path.description, keepingUnicode: true)) is not a single name")
    }
    if policy == .overwrite {
      // rename(2) replaces a file; it refuses to replace a directory, and replaces a symlink
      // itself (never writing through it).
      guard renameat(from, name, directory, target) == 0 else {
        throw .cannotWrite("\(parentPath)/\(target): \(errnoText())")
      }
    } else {
      // renameat2(RENAME_NOREPLACE): the name itself first, then — under the rename policy —
      // `name (1).ext`, `name (2).ext`, … until one is free (no look first: the rename is the
      // look, and a file appearing meanwhile is never clobbered); past a thousand taken
      // names, random numbers.
      var attempt = 1
      while renameNoReplace(from, name, directory, target) != 0 {
        guard errno == EEXIST, policy == .rename else {
          if errno == EEXIST { return nil }
          throw .cannotWrite("\(parentPath)/\(target): \(errnoText())")
        }
        target = numbered(path.fileName, attempt <= 1000 ? attempt : Int.random(in: 1001...99_999))
        attempt += 1
      }
    }
    // What was placed is a file: saying so spares Foundation a stat to find out.
    return URL(fileURLWithPath: parentPath + "/" + target, isDirectory: false)
  }

  /// Creates the empty folder `path` under the root (and the folders above it) with the
  /// permission bits `mode & 0o777` (less the umask); a folder already there is kept as it is.
  /// Walks and checks as ``openDirectory(_:create:)`` does, never following a link.
  ///
  /// - Returns: Where the folder is.
  /// - Throws: ``ResourceError/unsafeDestination(_:)`` when a link or a file is in the way;
  ///   ``ResourceError/cannotWrite(_:)`` when it cannot be created.
  func makeFolder(at path: RelativePath, mode: UInt32) throws(ResourceError) -> URL {
    let parent = try openDirectory(path.components.dropLast(), create: true)
    defer { close(parent) }
    let shown = escaped(path.description, keepingUnicode: true)
    if mkdirat(parent, path.fileName, mode_t(mode & 0o777)) != 0 && errno != EEXIST {
      throw .cannotWrite("\(shown): \(errnoText())")
    }
    let folder = openat(parent, path.fileName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    guard folder >= 0 else {
      if errno == ELOOP || errno == ENOTDIR {
        throw .unsafeDestination("\(shown) is a symbolic link or not a folder")
      }
      throw .cannotWrite("\(shown): \(errnoText())")
    }
    close(folder)
    return root.appending(path: path.description)
  }

  /// Whether something (a file, folder or link) is at `path` under the root. Walks the
  /// folders as ``openDirectory(_:create:)`` does, never following a link; a missing or unsafe
  /// folder on the way means nothing is there.
  func exists(_ path: RelativePath, folders: FolderCache? = nil) -> Bool {
    guard let directory = folder(of: path, folders) else { return false }
    defer { if folders == nil { close(directory) } }
    return exists(path.fileName, in: directory)
  }

  /// The folders a run of lookups walked last (a survey of an offer's files, most of them in
  /// the same folder as the one before): the last folder's descriptor, or that it is missing.
  /// One survey's, on one thread; closes its descriptor when released.
  final class FolderCache {
    fileprivate var components: [String]?
    fileprivate var fd: Int32 = -1

    init() {}

    deinit {
      if fd >= 0 { close(fd) }
    }
  }

  /// The folder `path` is in, opened without following a link: from `folders` when it holds
  /// it (which keeps it: the caller closes it only without a cache), else walked; nil when it
  /// is missing or not a folder.
  private func folder(of path: RelativePath, _ folders: FolderCache?) -> Int32? {
    let parents = Array(path.components.dropLast())
    guard let folders else { return try? openDirectory(parents[...], create: false) }
    if folders.components != parents {
      if folders.fd >= 0 { close(folders.fd) }
      folders.components = parents
      folders.fd = (try? openDirectory(parents[...], create: false)) ?? -1
    }
    return folders.fd >= 0 ? folders.fd : nil
  }

  /// The extended attribute a placed file carries: the sender's 32-byte fingerprint — only
  /// that sender's files are ever compared for it (``holdsFile(at:matching:from:)``) — then the
  /// path it was offered as (its name before the rename policy numbered it:
  /// ``heldFile(at:matching:from:renamed:)`` reads it). One attribute, one system call per
  /// file.
  static let placementAttribute = "user.ferry.placed"
  /// What builds before the one attribute wrote (a file they placed is still recognized):
  /// the sender alone, and the path offered.
  static let senderAttribute = "user.ferry.sender"
  static let offeredAttribute = "user.ferry.offered"

  /// The sender and the path offered that open file `fd` records, if it records them
  /// (``placementAttribute``, or the two attributes before it).
  private static func placement(_ fd: Int32) -> (sender: [UInt8], offered: [UInt8]?)? {
    var recorded = [UInt8](repeating: 0, count: 32 + RelativePath.maximumBytes + 1)
    let length = recorded.withUnsafeMutableBytes {
      ferry_get_attribute(fd, Self.placementAttribute, $0.baseAddress, $0.count)
    }
    if length >= 32 { return (Array(recorded[..<32]), Array(recorded[32..<length])) }
    var sender = [UInt8](repeating: 0, count: 64)
    let senderLength = sender.withUnsafeMutableBytes {
      ferry_get_attribute(fd, Self.senderAttribute, $0.baseAddress, $0.count)
    }
    guard senderLength == 32 else { return nil }
    let offeredLength = recorded.withUnsafeMutableBytes {
      ferry_get_attribute(fd, Self.offeredAttribute, $0.baseAddress, $0.count)
    }
    return (
      Array(sender.prefix(32)), offeredLength >= 0 ? Array(recorded.prefix(offeredLength)) : nil
    )
  }

  /// Whether a regular file that `sender` sent (``senderAttribute``) with `file`'s size and
  /// modification time is at `path` under the root — a cheap check: nothing is read. Walks and
  /// opens without following a link. On a filesystem without extended attributes, never.
  func holdsFile(
    at path: RelativePath, matching file: TransferFile, from sender: [UInt8],
    folders: FolderCache? = nil
  ) -> Bool {
    guard let fd = openFile(at: path, matching: file, folders: folders) else { return false }
    defer { close(fd) }
    return Self.carries(sender, fd)
  }

  /// Where under the root a file that `sender` placed with `file`'s size and modification time
  /// is (``holdsFile(at:matching:from:)``): at `path` itself, or — with `renamed`, when
  /// something else is at `path` — under one of the names the `rename` policy gives a file
  /// offered as `path` (`NAME (1).EXT`, `NAME (2).EXT`, …), walked as
  /// ``place(_:from:at:policy:in:)`` walks them, up to the first name not taken (at most a
  /// thousand): the same file
  /// sent again after its name was taken. Nil when there is none. Nothing is read or written.
  func heldFile(
    at path: RelativePath, matching file: TransferFile, from sender: [UInt8], renamed: Bool,
    folders: FolderCache? = nil
  ) -> RelativePath? {
    if holdsFile(at: path, matching: file, from: sender, folders: folders) { return path }
    guard renamed, exists(path, folders: folders) else { return nil }
    // Bounded: past a thousand taken names, sending once more costs a copy, not a long walk.
    for number in 1...1000 {
      guard let candidate = Self.renamed(path, number), exists(candidate, folders: folders)
      else { return nil }
      if holdsFile(at: candidate, matching: file, from: sender, offeredAs: path, folders: folders) {
        return candidate
      }
    }
    return nil
  }

  /// Whether the file at `path` is one `sender` placed, with `file`'s size and time, and that
  /// was offered as `offered` (``offeredAttribute``): a renamed copy is found for the name it
  /// was renamed from only, so that a sender cannot learn whether some other name is taken by
  /// offering its own `X (1).txt` and then `X.txt`.
  private func holdsFile(
    at path: RelativePath, matching file: TransferFile, from sender: [UInt8],
    offeredAs offered: RelativePath, folders: FolderCache?
  ) -> Bool {
    guard let fd = openFile(at: path, matching: file, folders: folders) else { return false }
    defer { close(fd) }
    guard let recorded = Self.placement(fd) else { return false }
    return recorded.sender == sender && recorded.offered == Array(offered.description.utf8)
  }

  /// `path` with its last component numbered as the `rename` policy numbers it
  /// (``numbered(_:_:)``); nil when that name is too long to be one.
  private static func renamed(_ path: RelativePath, _ number: Int) -> RelativePath? {
    let components = path.components.dropLast() + [numbered(path.fileName, number)]
    return try? RelativePath(validating: components.joined(separator: "/"))
  }

  /// Whether the regular file at `path` under the root is one that `sender` placed
  /// (``senderAttribute``), whatever its size and time now: what that sender may be told of it
  /// (that its own file is there). Walks and opens without following a link.
  func holdsFile(at path: RelativePath, from sender: [UInt8], folders: FolderCache? = nil) -> Bool {
    guard let fd = openFile(at: path, matching: nil, folders: folders) else { return false }
    defer { close(fd) }
    return Self.carries(sender, fd)
  }

  /// Whether open file `fd` records `sender` as the one that placed it.
  private static func carries(_ sender: [UInt8], _ fd: Int32) -> Bool {
    placement(fd)?.sender == sender
  }

  /// The `checksum` digest of the regular file at `path` under the root when its size and
  /// modification time are `file`'s (the cheap check first: only then is it read); nil
  /// otherwise, when it cannot be read, or when `proceed` (asked before each MiB) says to stop.
  /// Walks and opens without following a link.
  func digest(
    ofFileAt path: RelativePath, matching file: TransferFile, checksum: ChecksumAlgorithm,
    while proceed: () -> Bool = { true }
  ) -> [UInt8]? {
    guard let fd = openFile(at: path, matching: file) else { return nil }
    defer { close(fd) }
    var hasher = ContentHasher(checksum)
    // Short: it shrank since the fstat, or cannot be read.
    guard hashPrefix(of: fd, length: file.size, into: &hasher, while: proceed) else { return nil }
    return hasher.finalize()
  }

  /// Opens, for reading, the regular file at `path` under the root if it has `file`'s size and
  /// modification time (any, when `file` is nil); the caller closes it. Walks and opens without
  /// following a link.
  private func openFile(
    at path: RelativePath, matching file: TransferFile?, folders: FolderCache? = nil
  ) -> Int32? {
    guard let directory = folder(of: path, folders) else { return nil }
    defer { if folders == nil { close(directory) } }
    let fd = openat(directory, path.fileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    var status = stat()
    guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
      file?.hasSizeAndTime(of: status) ?? true
    else {
      close(fd)
      return nil
    }
    return fd
  }

  private func exists(_ name: String, in directory: Int32) -> Bool {
    var status = stat()
    return fstatat(directory, name, &status, AT_SYMLINK_NOFOLLOW) == 0
  }

  /// Whether `name` is one ordinary directory entry name: not empty, not `.` or `..`, without
  /// the bytes `/` or NUL.
  static func isSingleName(_ name: String) -> Bool {
    let bytes = name.utf8
    return !bytes.isEmpty && !bytes.elementsEqual(".".utf8) && !bytes.elementsEqual("..".utf8)
      && !bytes.contains(UInt8(ascii: "/")) && !bytes.contains(0)
  }
}

/// `report.pdf` → `report (1).pdf`; `archive.tar.gz` → `archive (1).tar.gz`; `.bashrc` →
/// `.bashrc (1)`.
func numbered(_ name: String, _ number: Int) -> String {
  let body = name.hasPrefix(".") ? String(name.dropFirst()) : name
  let prefix = name.hasPrefix(".") ? "." : ""
  var parts = body.split(separator: ".", omittingEmptySubsequences: false)
  guard parts.count > 1 else { return "\(name) (\(number))" }
  var extensionCount = 1
  if parts.count > 2, parts[parts.count - 2].count <= 4,
    ["gz", "bz2", "xz", "zst"].contains(parts.last!)
  {
    extensionCount = 2
  }
  let stem = parts.dropLast(extensionCount).joined(separator: ".")
  parts = Array(parts.suffix(extensionCount))
  return "\(prefix)\(stem) (\(number)).\(parts.joined(separator: "."))"
}

/// Renames `name` (in directory `from`) to `target` (in `to`) unless `target` exists, in which
/// case it fails with EEXIST and changes nothing. Returns 0, or -1 with errno set.
///
/// renameat2(RENAME_NOREPLACE) where the filesystem has it. NFS and many FUSE filesystems
/// refuse the flag (EINVAL): then link(2) and unlink, which fail with EEXIST just as atomically;
/// where hard links are refused too (EPERM, ENOTSUP), a check and then rename(2), which leaves a
/// narrow race. `tryRenameat2: false` starts at the fallback (tests run it on any filesystem).
func renameNoReplace(
  _ from: Int32, _ name: String, _ to: Int32, _ target: String, tryRenameat2: Bool = true
) -> Int32 {
  if tryRenameat2 {
    if ferry_rename_noreplace(from, name, to, target) == 0 { return 0 }
    guard [EINVAL, ENOSYS, ENOTSUP, EOPNOTSUPP].contains(errno) else { return -1 }
  }
  if linkat(from, name, to, target, 0) == 0 {
    // Placed. Should the old name stay (the unlink failing), it is only a second name in the
    // staging folder, which its next sweep removes; the file is where it belongs.
    _ = unlinkat(from, name, 0)
    return 0
  }
  guard [EPERM, ENOTSUP, EOPNOTSUPP, EMLINK].contains(errno) else { return -1 }
  var status = stat()
  if fstatat(to, target, &status, AT_SYMLINK_NOFOLLOW) == 0 {
    errno = EEXIST
    return -1
  }
  return renameat(from, name, to, target)
}

func errnoText() -> String {
  String(cString: strerror(errno))
}
