import CFerrySystem
import Crypto
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `DEST/.ferry-partial/`: where incoming files are written until they are verified, on the
/// destination's own filesystem so that placing them is a rename(2).
///
/// A staged file is named after a digest of (sender fingerprint, path, size, modification
/// time), so offering the same file again finds its bytes and resumes from them; a `.meta` file
/// beside a large one records those fields for people. Each staged file has one writer: offers
/// in this process claim its name (a second offer of the same file gets a name of its own), and
/// an exclusive flock(2) keeps another process off it. Stale staging is removed after a
/// configurable age. A file received with `relocate: false` is handed over as `NAME.received`,
/// which stale cleanup never touches.
final class StagingArea: Sendable {
  /// The staging directory's name under the destination (no offered path may use it).
  static let directoryName = PathError.reservedName
  /// Files at least this large get a `.meta` file and their own fsync; smaller ones are cheap to
  /// send again and are flushed together at the end of the offer.
  static let metadataThreshold: UInt64 = 1 << 20
  /// The suffix of a file being received.
  static let partSuffix = ".part"
  /// The suffix of a record describing a large staged file.
  static let metaSuffix = ".meta"
  /// The suffix of a verified file handed to the application where it was staged.
  static let receivedSuffix = ".received"
  /// The suffix of a streamed file being received (before ``partSuffix``): it can never be
  /// resumed, so one left behind (a receiver that was killed) is removed at any age.
  static let streamSuffix = ".stream"

  let destination: ConfinedDirectory
  /// Descriptor of the staging directory (opened without following symlinks).
  let fd: Int32
  /// The filesystem the staging directory is on (`st_dev`), for space reservations.
  let device: UInt64
  /// The staging directory's identity, for claims shared by offers in this process.
  let identity: String
  /// The destination folders files were last placed in, still open for the next ones.
  private let folders = OpenFolders(capacity: 4)

  /// Opens (creating, mode 0700) the staging directory under `destination` (created if needed).
  ///
  /// - Throws: ``ResourceError`` when the destination or the staging directory is unsafe (a
  ///   symlink, owned by another user, writable by others) or cannot be created.
  init(destination url: URL) throws(ResourceError) {
    do {
      try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    } catch {
      throw .cannotWrite("\(url.path): \(error.localizedDescription)")
    }
    destination = ConfinedDirectory(root: url)
    let root = try destination.openDirectory([], create: false)
    defer { close(root) }
    if mkdirat(root, Self.directoryName, 0o700) != 0 && errno != EEXIST {
      throw .cannotWrite("\(url.path)/\(Self.directoryName): \(errnoText())")
    }
    let staging = openat(root, Self.directoryName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    guard staging >= 0 else {
      throw .unsafeDestination("\(url.path)/\(Self.directoryName) is not a directory of ours")
    }
    // Another user's staging folder (made before we came, in a shared destination) could hand
    // them our files or let them swap what we verified: refuse it.
    var status = stat()
    guard fstat(staging, &status) == 0 else {
      close(staging)
      throw .cannotWrite("\(url.path)/\(Self.directoryName): \(errnoText())")
    }
    guard status.st_uid == geteuid() else {
      close(staging)
      throw .unsafeDestination(
        "\(url.path)/\(Self.directoryName) belongs to another user (uid \(status.st_uid)); "
          + "remove it or receive elsewhere")
    }
    guard status.st_mode & 0o022 == 0 else {
      close(staging)
      throw .unsafeDestination(
        "\(url.path)/\(Self.directoryName) is writable by other users; remove it or "
          + "'chmod 700' it")
    }
    fd = staging
    device = UInt64(status.st_dev)
    identity = "\(status.st_dev):\(status.st_ino)"
    StagingClaims.shared.open(identity)
  }

  deinit {
    StagingClaims.shared.close(identity)
    close(fd)
  }

  /// The staging name of a file offered by `sender`.
  func name(for file: TransferFile, from sender: Fingerprint) -> String {
    var hasher = SHA256()
    hasher.update(data: sender.bytes)
    hasher.update(data: Array(file.path.utf8))
    hasher.update(
      data: Array(
        "\u{0}\(file.size)\u{0}\(file.modificationSeconds).\(file.modificationNanoseconds)".utf8))
    return Hex.lowercase(hasher.finalize().prefix(16)) + Self.partSuffix
  }

  /// Claims `name` for one offer of this process: true if no other offer holds it. A name
  /// already claimed must not be written by a second offer.
  func claim(_ name: String) -> Bool {
    StagingClaims.shared.claim(identity + "/" + name)
  }

  /// A staging name of its own for a file whose usual name another offer holds (it starts
  /// from nothing: no resume).
  func uniqueName(like name: String) -> String {
    while true {
      let candidate =
        String(name.dropLast(Self.partSuffix.count)) + "-"
        + Hex.lowercase(Self.randomBytes(6)) + Self.partSuffix
      if claim(candidate) { return candidate }
    }
  }

  /// `count` (at most 8) random bytes from one draw of the system's generator (one
  /// getrandom(2), not one per byte).
  static func randomBytes(_ count: Int) -> [UInt8] {
    precondition(count <= 8, "one draw gives 8 bytes")
    var generator = SystemRandomNumberGenerator()
    let word: UInt64 = generator.next()
    return (0..<min(count, 8)).map { UInt8(truncatingIfNeeded: word >> ($0 * 8)) }
  }

  /// A staging name of its own, claimed, for a streamed file (``streamSuffix``): never resumed,
  /// so never shared.
  func streamName(like name: String) -> String {
    let stem = String(name.dropLast(Self.partSuffix.count))
    while true {
      let candidate =
        stem + "-" + Hex.lowercase(Self.randomBytes(6))
        + Self.streamSuffix + Self.partSuffix
      if claim(candidate) { return candidate }
    }
  }

  /// Calls `action` once `name` is released, at once if it is not claimed.
  func whenReleased(_ name: String, _ action: @escaping @Sendable () -> Void) {
    StagingClaims.shared.whenReleased(identity + "/" + name, action)
  }

  /// Gives up the claims on `names`.
  func release(_ names: some Sequence<String>) {
    StagingClaims.shared.release(names.map { identity + "/" + $0 })
  }

  /// Opens a staged file for writing, keeping what it holds, under an exclusive lock; returns
  /// the descriptor, its length, and whether it was created now, with `mode` (which the
  /// umask narrows). Never follows a symlink.
  ///
  /// - Throws: ``ResourceError/cannotWrite(_:)``, also when another process is writing it.
  func open(_ name: String, creatingWith mode: mode_t = 0o600) throws(ResourceError) -> (
    fd: Int32, length: UInt64, created: Bool
  ) {
    // Most files are new: created with their mode at once (no fchmod later, no fstat now:
    // a file just created is empty). One there already is opened as it is.
    var created = true
    var file = openat(fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
    if file < 0, errno == EEXIST {
      created = false
      file = openat(fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
    }
    guard file >= 0 else { throw .cannotWrite("staging file \(name): \(errnoText())") }
    guard flock(file, LOCK_EX | LOCK_NB) == 0 else {
      let busy = errno == EWOULDBLOCK
      let reason = errnoText()
      close(file)
      throw .cannotWrite(
        busy
          ? "staging file \(name): another process is receiving the same file"
          : "staging file \(name): \(reason)")
    }
    if created { return (file, 0, true) }
    var status = stat()
    guard fstat(file, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
      close(file)
      throw .cannotWrite("staging file \(name): not a regular file")
    }
    return (file, UInt64(status.st_size), false)
  }

  /// The staged files' names, read in one listing (cheaper than asking after thousands of
  /// files one by one); nil when there are more than `limit` entries or the folder cannot be
  /// read.
  func stagedNames(limit: Int = 100_000) -> Set<String>? {
    names(limit: limit).map { Set($0.filter { $0.hasSuffix(Self.partSuffix) }) }
  }

  /// The names in the staging folder (those that are UTF-8), nil when it cannot be listed or
  /// holds more than `limit`.
  ///
  /// Each listing reads a description of the folder of its own (`openat(fd, ".")`): a `dup` of
  /// ``fd`` would share its read position, so a second listing — the survey's, right after
  /// stale cleanup's — began at the end and found nothing staged, and every file of an offer
  /// of more than 16 files started over.
  func names(limit: Int = .max) -> [String]? {
    let listing = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard listing >= 0, let directory = fdopendir(listing) else {
      if listing >= 0 { close(listing) }
      return nil
    }
    defer { closedir(directory) }
    var entries: [String] = []
    while let entry = readdir(directory) {
      guard entries.count < limit else { return nil }
      let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
      if let name = String(validating: bytes, as: UTF8.self) { entries.append(name) }
    }
    return entries
  }

  /// The length of a staged file, 0 if there is none (a symlink counts as none).
  func stagedLength(_ name: String) -> UInt64 {
    var status = stat()
    guard fstatat(fd, name, &status, AT_SYMLINK_NOFOLLOW) == 0, (status.st_mode & S_IFMT) == S_IFREG
    else { return 0 }
    return UInt64(status.st_size)
  }

  /// Records what a staged file is, for people looking at the directory.
  func writeMeta(_ name: String, file: TransferFile, sender: Fingerprint) {
    let text = """
      {"sender":"\(sender.hexString)","path":\(jsonString(file.path)),"size":\(file.size),\
      "mtime":\(file.modificationSeconds)}

      """
    let meta = openat(
      fd, metaName(name), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard meta >= 0 else { return }
    _ = text.utf8CString.withUnsafeBufferPointer { write(meta, $0.baseAddress, $0.count - 1) }
    close(meta)
  }

  /// Removes a staged file and its metadata.
  func remove(_ name: String) {
    unlinkat(fd, name, 0)
    removeMeta(name)
  }

  /// Moves verified staged file `name` to `path` under the destination
  /// (``ConfinedDirectory/place(_:from:at:policy:in:)``). The folder it goes into stays open
  /// for the next files, which in a walked tree are most often in the same folder. Any thread:
  /// files of one offer are placed on several at once.
  ///
  /// - Returns: Where the file landed, or nil when `policy` is `.skip` and the name was taken.
  /// - Throws: ``ResourceError`` when the destination is unsafe or cannot be written.
  func place(_ name: String, at path: RelativePath, policy: ConflictPolicy) throws(ResourceError)
    -> URL?
  {
    let parents = Array(path.components.dropLast())
    let folder: OpenFolder
    if let open = folders.find(parents) {
      folder = open
    } else {
      folder = OpenFolder(
        components: parents, fd: try destination.openDirectory(parents[...], create: true))
      folders.keep(folder)
    }
    return try withExtendedLifetime(folder) { () throws(ResourceError) -> URL? in
      try destination.place(name, from: fd, at: path, policy: policy, in: folder.fd)
    }
  }

  /// Removes a staged file's metadata (it was placed, or handed over).
  func removeMeta(_ name: String) {
    unlinkat(fd, metaName(name), 0)
  }

  /// Renames the verified staged file `name` to `NAME.received` for the application, out of
  /// reach of stale cleanup; returns its URL.
  ///
  /// - Throws: ``ResourceError/cannotWrite(_:)`` when the rename fails.
  func handOver(_ name: String) throws(ResourceError) -> URL {
    let stem = String(name.dropLast(Self.partSuffix.count))
    var received = stem + Self.receivedSuffix
    // Never over a file handed over before and not yet moved by the application (the same
    // file sent twice has the same staging name): the second one gets a name of its own.
    while renameNoReplace(fd, name, fd, received) != 0 {
      guard errno == EEXIST else { throw .cannotWrite("staging file \(name): \(errnoText())") }
      received =
        stem + "-" + Hex.lowercase(Self.randomBytes(6))
        + Self.receivedSuffix
    }
    removeMeta(name)
    return destination.root.appendingPathComponent(Self.directoryName)
      .appendingPathComponent(received)
  }

  private func metaName(_ name: String) -> String { name + Self.metaSuffix }
}

/// The process's file mode creation mask, read once (without changing it, from
/// /proc/self/status; by umask(2) twice where /proc is missing, before any thread creates files).
let processUmask: mode_t = {
  if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
    let value = mode_t(
      line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
  {
    return value
  }
  let mask = umask(0o022)
  umask(mask)
  return mask
}()

private func jsonString(_ text: String) -> String {
  var out = "\""
  for scalar in text.unicodeScalars {
    switch scalar {
    case "\"": out += "\\\""
    case "\\": out += "\\\\"
    case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
    default: out.unicodeScalars.append(scalar)
    }
  }
  return out + "\""
}
