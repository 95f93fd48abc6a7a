internal import FerryWire
import Foundation

/// What a session offers for the items the application gave (``Session/offer(_:to:checksum:)``):
/// each item's ``TransferFile`` — its size, time and permissions as the disk has them now, or as
/// the walk that found it saw them a moment ago — and where it is read from, as far as the peer's
/// protocol version can take them.
enum OfferedFiles {
  /// The files and their URLs, in order, for a peer of protocol `version`.
  ///
  /// - Throws: ``TransferError/resource(_:)``: a streamed item for a peer before version 5
  ///   (``ResourceError/unsupportedByPeer(_:)``), an item that is not a readable regular file
  ///   (or folder), or nothing left to offer (``ResourceError/tooManyFiles(_:)``).
  static func make(
    _ items: [ResourceItem], version: UInt16
  ) throws(TransferError) -> (files: [TransferFile], urls: [URL]) {
    // Empty folders only for a peer that can create them (version 3); an older one gets the
    // files alone (a `ferry send` summary counts folders apart, so its count still holds).
    let folders = version >= WireProtocol.digestChoiceVersion
    var files: [TransferFile] = []
    var urls: [URL] = []
    for item in items where folders || !item.isFolder {
      if item.isStreamed {
        guard version >= WireProtocol.streamedFilesVersion else {
          throw .resource(.unsupportedByPeer("a file of unknown size (\(item.path))"))
        }
        // Its size is what arrives before its end; its time is now; it is the sender's own
        // (mode 0600, as a file it wrote itself), less the receiver's umask.
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        files.append(
          TransferFile(
            path: item.path, size: 0, modificationSeconds: Int64(now.tv_sec),
            modificationNanoseconds: UInt32(now.tv_nsec), permissions: 0o600, kind: .stream))
        urls.append(item.url)
        continue
      }
      // What a walk found a moment ago: the file is compared with it before it is read.
      if let found = item.metadata, !item.isFolder {
        files.append(
          TransferFile(
            path: item.path, size: found.size, modificationSeconds: found.modificationSeconds,
            modificationNanoseconds: found.modificationNanoseconds, permissions: found.mode,
            kind: .file))
        urls.append(item.url)
        continue
      }
      var status = stat()
      guard stat(item.url.path, &status) == 0,
        (status.st_mode & S_IFMT) == (item.isFolder ? S_IFDIR : S_IFREG)
      else {
        throw .resource(
          .cannotRead(
            "\(item.url.path): not a readable regular \(item.isFolder ? "folder" : "file")"))
      }
      files.append(
        TransferFile(
          path: item.path, size: item.isFolder ? 0 : UInt64(status.st_size),
          modificationSeconds: Int64(status.st_mtim.tv_sec),
          modificationNanoseconds: UInt32(status.st_mtim.tv_nsec),
          permissions: UInt32(status.st_mode & 0o777), kind: item.isFolder ? .folder : .file))
      urls.append(item.url)
    }
    guard !files.isEmpty else { throw .resource(.tooManyFiles(0)) }
    return (files, urls)
  }
}
