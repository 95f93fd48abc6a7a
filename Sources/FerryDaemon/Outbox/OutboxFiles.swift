import Ferry
import FerryAgent
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What a queued send holds: its paths walked when it is queued (each file's size, time and
/// identity kept), and checked again when it is delivered — a file changed or gone since is
/// reported (`changed`, `missing`) and not sent; the rest is.
enum OutboxFiles {
  /// The files below `paths` (absolute paths of files and folders), as a send queues them.
  ///
  /// - Throws: ``APIProblem``: a relative path, one that cannot be read or sent, nothing to
  ///   send, or more than ``Outbox/maximumFiles`` files.
  static func snapshot(_ paths: [String]) throws(APIProblem) -> [OutboxEntry.File] {
    var entries: [ResourceItem] = []
    for path in paths {
      guard path.utf8.first == UInt8(ascii: "/") else {
        throw APIProblem(
          400, "bad-request",
          "paths are absolute (the daemon has no current folder): \(DisplayText.escaping(path))")
      }
      let url = URL(fileURLWithPath: path)
      entries.append(ResourceItem(url: url, path: url.standardizedFileURL.lastPathComponent))
    }
    let checked: [ResourceItem]
    do {
      checked = try SendBatch.checked(entries)
    } catch {
      throw problem(error)
    }
    var walk = ResourceWalk(checked, skippingUnreadable: true)
    var files: [OutboxEntry.File] = []
    do {
      while let found = try walk.next() {
        guard files.count < Outbox.maximumFiles else {
          throw APIProblem(
            413, "too-many-files",
            "a queued send holds at most \(Outbox.maximumFiles) files: split it, or send it "
              + "now with ferry send")
        }
        var status = stat()
        guard stat(found.item.url.path, &status) == 0 else { continue }
        files.append(
          OutboxEntry.File(
            path: found.item.path, source: found.item.url.path, folder: found.item.isFolder,
            size: found.item.isFolder ? 0 : UInt64(status.st_size),
            modified: Int64(status.st_mtim.tv_sec) * 1_000_000_000
              + Int64(status.st_mtim.tv_nsec),
            device: UInt64(status.st_dev), inode: UInt64(status.st_ino), status: .pending))
      }
    } catch let error as APIProblem {
      throw error
    } catch let error as ResourceError {
      throw problem(SendFailure(error))
    } catch {
      throw APIProblem(400, "cannot-read", "\(error)")
    }
    guard !files.isEmpty else { throw APIProblem(400, "cannot-read", "nothing to send") }
    return files
  }

  /// The files of `entry` still to deliver, as they were queued; those changed or gone since
  /// are marked so in `entry` (and not returned).
  static func deliverable(_ entry: inout OutboxEntry) -> [ResourceItem] {
    var items: [ResourceItem] = []
    for index in entry.files.indices {
      let file = entry.files[index]
      switch file.status {
      case .stored, .identical, .skipped, .changed, .missing: continue
      case .pending, .failed, .corrupt: break
      }
      var status = stat()
      guard stat(file.source, &status) == 0 else {
        entry.files[index].status = .missing
        continue
      }
      let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
      let isFolder = status.st_mode & S_IFMT == S_IFDIR
      guard isFolder == file.folder,
        file.folder
          || (UInt64(status.st_size) == file.size && modified == file.modified
            && UInt64(status.st_ino) == file.inode && UInt64(status.st_dev) == file.device)
      else {
        entry.files[index].status = .changed
        continue
      }
      let url = URL(fileURLWithPath: file.source)
      items.append(
        file.folder
          ? ResourceItem(folderAt: url, path: file.path) : ResourceItem(url: url, path: file.path))
    }
    return items
  }

  /// The API's words for a send that cannot be made of these paths.
  private static func problem(_ failure: SendFailure) -> APIProblem {
    switch failure.kind {
    case .invalidPath: APIProblem(400, "unsafe-path", failure.message)
    default: APIProblem(400, "cannot-read", failure.message)
    }
  }
}
