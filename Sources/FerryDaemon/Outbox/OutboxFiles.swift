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
    guard (1...1000).contains(paths.count) else {
      throw APIProblem.badRequest("a send names 1 to 1000 paths (folders count as one)")
    }
    var entries: [ResourceItem] = []
    for path in paths {
      guard path.utf8.first == UInt8(ascii: "/") else {
        throw APIProblem(
          400, "bad-request",
          "paths are absolute (the daemon has no current folder): \(DisplayText.escaping(path))")
      }
      // Split as the kernel splits it, on the byte "/": no NUL (C would cut the path there),
      // no "." or ".." (what is stat'ed is what is named), at most 4096 bytes.
      let components = path.utf8.split(separator: UInt8(ascii: "/"))
      guard path.utf8.count <= 4096, !path.utf8.contains(0),
        !components.contains(where: { $0.elementsEqual(".".utf8) || $0.elementsEqual("..".utf8) })
      else {
        throw APIProblem(
          400, "bad-request",
          "a path is at most 4096 bytes, without NUL, '.' or '..': \(DisplayText.escaping(path))")
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
    var total: UInt64 = 0
    do {
      while let found = try walk.next() {
        guard files.count < Outbox.maximumFiles else {
          throw APIProblem(
            413, "too-many-files",
            "a queued send holds at most \(Outbox.maximumFiles) files: split it, or send it "
              + "now with ferry send")
        }
        // A folder as itself (never through a link), a file as it will be read.
        var status = stat()
        let looked =
          found.item.isFolder
          ? lstat(found.item.url.path, &status) : stat(found.item.url.path, &status)
        guard looked == 0 else { continue }
        let (sum, overflow) = total.addingReportingOverflow(
          found.item.isFolder ? 0 : UInt64(status.st_size))
        guard !overflow, sum <= OutboxFiles.maximumBytes else {
          throw APIProblem(413, "too-large", "a send holds at most 2^62 bytes")
        }
        total = sum
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

  /// Runs `work` (a walk of the disk, stats) on a thread of its own, so that a slow or hung
  /// mount holds that thread, never the daemon's tasks.
  static func offThread<T: Sendable>(
    _ work: @escaping @Sendable () throws(APIProblem) -> T
  ) async throws(APIProblem) -> T {
    let result: Result<T, APIProblem> = await withCheckedContinuation { continuation in
      Thread.detachNewThread {
        do throws(APIProblem) {
          continuation.resume(returning: .success(try work()))
        } catch {
          continuation.resume(returning: .failure(error))
        }
      }
    }
    return try result.get()
  }

  /// The most bytes one send holds (what one Ferry offer may announce).
  static let maximumBytes: UInt64 = 1 << 62

  /// The files of `entry` still to deliver, as they were queued; those changed or gone since
  /// are marked so in `entry` (and not returned). An empty folder must still be that folder
  /// (not a link), and still empty: what it holds now was never queued.
  static func deliverable(_ entry: inout OutboxEntry) -> [ResourceItem] {
    var items: [ResourceItem] = []
    for index in entry.files.indices {
      let file = entry.files[index]
      switch file.status {
      case .stored, .identical, .skipped, .changed, .missing: continue
      case .pending, .failed, .corrupt: break
      }
      var status = stat()
      let looked = file.folder ? lstat(file.source, &status) : stat(file.source, &status)
      guard looked == 0 else {
        entry.files[index].status = .missing
        continue
      }
      if file.streamed == true {
        // A browser's file: its FIFO, the one made for it.
        guard status.st_mode & S_IFMT == S_IFIFO, UInt64(status.st_ino) == file.inode,
          UInt64(status.st_dev) == file.device
        else {
          entry.files[index].status = .missing
          continue
        }
        items.append(
          ResourceItem(streamingFrom: URL(fileURLWithPath: file.source), path: file.path))
        continue
      }
      let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
      let isFolder = status.st_mode & S_IFMT == S_IFDIR
      let same = UInt64(status.st_ino) == file.inode && UInt64(status.st_dev) == file.device
      guard isFolder == file.folder, same,
        file.folder
          ? Self.isEmptyFolder(file.source)
          : (UInt64(status.st_size) == file.size && modified == file.modified)
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

  /// Whether the folder at `path` holds nothing.
  private static func isEmptyFolder(_ path: String) -> Bool {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else {
      return false
    }
    return names.isEmpty
  }

  /// The API's words for a send that cannot be made of these paths.
  private static func problem(_ failure: SendFailure) -> APIProblem {
    switch failure.kind {
    case .invalidPath: APIProblem(400, "unsafe-path", failure.message)
    default: APIProblem(400, "cannot-read", failure.message)
    }
  }
}
