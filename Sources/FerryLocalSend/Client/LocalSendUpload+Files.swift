import Ferry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

extension LocalSendUpload {
  /// Every file's SHA-256 (the protocol wants them before anything is sent), of the bytes
  /// announced (`size`, which the upload then sends), as many at once as there are
  /// processors (at most 4), off the calling task's thread.
  ///
  /// - Throws: ``LocalSendSendError/unreadable(_:)`` for the first file that cannot be read.
  static func digests(of items: [(url: URL, path: String, size: UInt64)])
    async throws(LocalSendSendError) -> [String]
  {
    let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4))
    let next = NIOLockedValueBox(0)
    let found = NIOLockedValueBox([String?](repeating: nil, count: items.count))
    let failure = NIOLockedValueBox<String?>(nil)
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<workers {
        group.addTask {
          while failure.withLockedValue({ $0 == nil }) {
            let index = next.withLockedValue { next -> Int? in
              guard next < items.count else { return nil }
              defer { next += 1 }
              return next
            }
            guard let index else { return }
            let item = items[index]
            do {
              let digest = try await NIOThreadPool.singleton.runIfActive {
                try fileDigest(atPath: item.url.path, length: item.size, .sha256)
              }
              found.withLockedValue { $0[index] = Hex.lowercase(digest) }
            } catch {
              failure.withLockedValue { $0 = $0 ?? "\(error)" }
            }
          }
        }
      }
    }
    if let failure = failure.withLockedValue({ $0 }) { throw .unreadable(failure) }
    return found.withLockedValue { $0.map { $0 ?? "" } }
  }

  /// A query value with everything but unreserved characters percent-encoded.
  static func escaped(_ value: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
  }

  static func metadata(_ url: URL) -> LocalSendFile.Metadata? {
    var status = stat()
    guard stat(url.path, &status) == 0 else { return nil }
    return LocalSendFile.Metadata(
      modified: LocalSendTime.string(status.st_mtim),
      accessed: LocalSendTime.string(status.st_atim))
  }

  /// A MIME type from the name's extension (what LocalSend shows); octet-stream otherwise.
  static func mimeType(_ path: String) -> String {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
    switch name[name.index(after: dot)...].lowercased() {
    case "jpg", "jpeg": return "image/jpeg"
    case "png": return "image/png"
    case "gif": return "image/gif"
    case "heic": return "image/heic"
    case "webp": return "image/webp"
    case "mp4": return "video/mp4"
    case "mov": return "video/quicktime"
    case "mp3": return "audio/mpeg"
    case "pdf": return "application/pdf"
    case "zip": return "application/zip"
    case "txt", "md", "log": return "text/plain"
    case "json": return "application/json"
    case "html", "htm": return "text/html"
    case "apk": return "application/vnd.android.package-archive"
    default: return "application/octet-stream"
    }
  }
}
