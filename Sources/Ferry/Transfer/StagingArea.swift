import Crypto
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `DEST/.ferry-partial/`: where incoming files are written until they are verified, on the
/// destination's own filesystem so that placing them is a rename(2).
///
/// A staged file is named after a digest of (sender fingerprint, path, size, modification
/// time), so offering the same file again finds its bytes and resumes from them; a `.meta`
/// file beside it records those fields for people. Stale staging is removed after a
/// configurable age.
final class StagingArea: @unchecked Sendable {
  /// The staging directory's name under the destination.
  static let directoryName = ".ferry-partial"
  /// Files at least this large get a `.meta` file and their own fsync; smaller ones are cheap to
  /// send again and are flushed together at the end of the offer.
  static let metadataThreshold: UInt64 = 1 << 20

  let destination: ConfinedDirectory
  /// Descriptor of the staging directory (opened without following symlinks).
  let fd: Int32

  /// Opens (creating, mode 0700) the staging directory under `destination` (created if needed).
  ///
  /// - Throws: ``ResourceError`` when the destination or the staging directory is unsafe
  ///   (a symlink) or cannot be created.
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
    fd = staging
  }

  deinit {
    close(fd)
  }

  /// The staging name of a file offered by `sender`.
  func name(for file: OfferedFile, from sender: Fingerprint) -> String {
    var hasher = SHA256()
    hasher.update(data: sender.bytes)
    hasher.update(data: Array(file.path.utf8))
    hasher.update(
      data: Array(
        "\u{0}\(file.size)\u{0}\(file.modificationSeconds).\(file.modificationNanoseconds)".utf8))
    return Hex.lowercase(hasher.finalize().prefix(16)) + ".part"
  }

  /// Opens a staged file for writing, keeping what it holds; returns the descriptor and its
  /// length. Never follows a symlink.
  func open(_ name: String) throws(ResourceError) -> (fd: Int32, length: UInt64) {
    let file = openat(fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard file >= 0 else { throw .cannotWrite("staging file \(name): \(errnoText())") }
    var status = stat()
    fstat(file, &status)
    return (file, UInt64(status.st_size))
  }

  /// The length of a staged file, 0 if there is none (a symlink counts as none).
  func stagedLength(_ name: String) -> UInt64 {
    var status = stat()
    guard fstatat(fd, name, &status, AT_SYMLINK_NOFOLLOW) == 0, (status.st_mode & S_IFMT) == S_IFREG
    else { return 0 }
    return UInt64(status.st_size)
  }

  /// Records what a staged file is, for people looking at the directory.
  func writeMeta(_ name: String, file: OfferedFile, sender: Fingerprint) {
    let text = """
      {"sender":"\(sender.hexString)","path":\(jsonString(file.path)),"size":\(file.size),\
      "mtime":\(file.modificationSeconds)}

      """
    let meta = openat(
      fd, name + ".meta", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard meta >= 0 else { return }
    _ = text.utf8CString.withUnsafeBufferPointer { write(meta, $0.baseAddress, $0.count - 1) }
    close(meta)
  }

  /// Removes a staged file and its metadata.
  func remove(_ name: String) {
    unlinkat(fd, name, 0)
    unlinkat(fd, name + ".meta", 0)
  }

  /// Removes staged files not modified for `age`.
  func removeStale(olderThan age: Duration) {
    guard
      let entries = try? FileManager.default.contentsOfDirectory(
        atPath: destination.root.appendingPathComponent(Self.directoryName).path)
    else { return }
    let limit = Date().timeIntervalSince1970 - Double(age.components.seconds)
    for entry in entries where entry.hasSuffix(".part") {
      var status = stat()
      if fstatat(fd, entry, &status, AT_SYMLINK_NOFOLLOW) == 0,
        Double(status.st_mtim.tv_sec) < limit
      {
        remove(entry)
      }
    }
  }

  /// Removes the staging directory if it is empty.
  func removeIfEmpty() {
    let root = Glibc.open(destination.root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard root >= 0 else { return }
    unlinkat(root, Self.directoryName, AT_REMOVEDIR)
    close(root)
  }
}

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
