import Ferry
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// How `ferry send -` offers standard input, by what it is: a regular file (`< file`) as that
/// file, with its size, time and resume; a pipe, FIFO, socket or device as a stream, sent as it
/// is read once the receiver said yes (its size unknown until it ends, so the prompt says so);
/// and a terminal, or anything for several receivers, read first into a spool
/// (``StandardInputSpool``).
enum StandardInputSource {
  /// What `/dev/stdin` is.
  enum Kind: Equatable {
    /// A regular file: offered as itself.
    case file
    /// A terminal: typed text, read to Ctrl-D before anyone is asked.
    case terminal
    /// A pipe, FIFO, socket or device: sent as it comes.
    case stream
  }

  /// What standard input is now. A regular file counts as a file only when this process can
  /// open it again (``url``) and nothing of it was read yet: otherwise it is read where it is,
  /// as a stream (`sudo -u bob ferry send - < alice-only.txt`, `{ read header; ferry send -; }`).
  static var kind: Kind {
    var status = stat()
    if isatty(0) == 1 { return .terminal }
    guard fstat(0, &status) == 0, status.st_mode & S_IFMT == S_IFREG, lseek(0, 0, SEEK_CUR) == 0
    else { return .stream }
    let again = open(url.path, O_RDONLY | O_CLOEXEC)
    guard again >= 0 else { return .stream }
    close(again)
    return .file
  }

  /// Where standard input is opened from (a regular file anew, from its start).
  static let url = URL(fileURLWithPath: "/dev/stdin")
}
