import Ferry
import FerryLocalSend
import Foundation

/// A batch as the files a LocalSend device or a browser is offered: each with its size (as
/// the walk found it), its empty folders counted apart (neither takes folders), what could not
/// be read counted. No streamed file: both need each file's size before it is sent.
public struct SendFiles: Sendable {
  /// The files, in order: where each is, its path in the offer, its size.
  public let items: [(url: URL, path: String, size: UInt64)]
  /// Empty folders left out.
  public let folders: Int
  /// Paths left out because they could not be read.
  public let unreadable: Int

  /// The files of `batch`, walked part by part.
  ///
  /// - Throws: ``SendFailure`` for a file that can no longer be read, standard input read as
  ///   it is sent, or more files than a LocalSend session takes.
  public init(_ batch: SendBatch) throws(SendFailure) {
    var parts = batch.parts()
    var items: [(url: URL, path: String, size: UInt64)] = []
    var folders = 0
    while let part = try parts.next() {
      for item in part {
        if item.isFolder {
          folders += 1
          continue
        }
        if item.isStreamed {
          throw SendFailure(
            .usage,
            "LocalSend needs each file's size before it is sent: save standard input to a file "
              + "first")
        }
        var info = stat()
        guard stat(item.url.path, &info) == 0 else {
          throw SendFailure(
            .cannotRead,
            "cannot read \(printable(item.url.path)): \(String(cString: strerror(errno)))")
        }
        items.append((item.url, item.path, UInt64(max(0, info.st_size))))
      }
    }
    guard items.count <= LocalSendProtocol.Limits.maximumFiles else {
      throw SendFailure(
        .usage,
        "\(items.count) files: a LocalSend session takes at most "
          + "\(LocalSendProtocol.Limits.maximumFiles)")
    }
    (self.items, self.folders, unreadable) = (items, folders, parts.unreadable)
  }
}
