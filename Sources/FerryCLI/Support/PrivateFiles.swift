import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The private temporary files of `send -` and `receive --stdout`: a folder of their own in
/// `$TMPDIR`, and a whole-file copy between descriptors.
enum PrivateFiles {
  /// Where a copy stopped, with the errno.
  enum CopyFailure: Error {
    case read(Int32)
    case write(Int32)
  }

  /// A folder that could not be made, with the errno.
  struct FolderFailure: Error {
    let code: Int32
  }

  /// Makes `$TMPDIR/PREFIX-XXXXXX`, mode 0700 (mkdtemp).
  ///
  /// - Throws: ``FolderFailure`` when it cannot.
  static func makeFolder(prefix: String) throws(FolderFailure) -> URL {
    var template = Array(
      (FileManager.default.temporaryDirectory.path + "/\(prefix)-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw FolderFailure(code: errno) }
    return URL(fileURLWithPath: String(cString: made), isDirectory: true)
  }

  /// Copies what `input` holds, to its end, to `output`, 1 MiB at a time (a read or write
  /// interrupted by a signal is retried; a short write is finished).
  ///
  /// - Throws: which side failed, with its errno.
  static func copy(from input: Int32, to output: Int32) throws(CopyFailure) {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
      if count == 0 { return }
      if count < 0 {
        if errno == EINTR { continue }
        throw .read(errno)
      }
      var written = 0
      while written < count {
        let done = buffer.withUnsafeBytes {
          write(output, $0.baseAddress! + written, count - written)
        }
        if done < 0 {
          if errno == EINTR { continue }
          throw .write(errno)
        }
        written += done
      }
    }
  }
}
