import Ferry
import FerryAgent
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The folder `ferry receive` writes into, checked before anything is advertised: it exists
/// (or `--mkdir` makes it), it is a folder, and this user may create files in it.
struct ReceiveDestination: Sendable {
  /// The folder, absolute and standardized.
  let url: URL

  /// Checks (and with `create`, makes) the folder at `path`; `origin` says where the path was
  /// given when that was a config file (`config FILE:LINE`), for the messages.
  ///
  /// - Throws: ``CLIFailure`` (usage, `invalid-dir`) saying what is wrong and what to do.
  init(_ path: String, create: Bool, origin: String? = nil) throws(CLIFailure) {
    url = URL(fileURLWithPath: path).standardizedFileURL
    let shown = DisplayText.escaping(url.path) + (origin.map { " (dir, \($0))" } ?? "")
    var status = stat()
    if stat(url.path, &status) != 0 {
      let reason = errno
      guard reason == ENOENT, create else {
        throw Self.failure(
          reason == ENOENT
            ? "\(shown) does not exist ("
              + (origin == nil
                ? "--mkdir creates it)" : "mkdir = true there, or --mkdir, creates it)")
            : "\(shown): \(systemWords(reason))")
      }
      try Self.makeFolders(url)
      guard stat(url.path, &status) == 0 else {
        throw Self.failure("\(shown): \(systemWords(errno))")
      }
    }
    guard status.st_mode & S_IFMT == S_IFDIR else {
      throw Self.failure("\(shown) is not a folder")
    }
    // What creating a file in it needs. A read-only filesystem says EROFS.
    guard access(url.path, W_OK | X_OK) == 0 else {
      let reason = errno
      throw Self.failure(
        reason == EROFS
          ? "\(shown) is on a read-only filesystem: nothing can be received into it"
          : "cannot write in \(shown): \(systemWords(reason))")
    }
  }

  /// How much room it has (``DestinationSpace``).
  var space: DestinationSpace { DestinationSpace(url) }

  /// Bytes this user may still write on the folder's filesystem; nil if unknown.
  var availableBytes: UInt64? { space.availableBytes }

  /// mkdir -p, with the system's words for a failure.
  private static func makeFolders(_ url: URL) throws(CLIFailure) {
    var path = ""
    for component in url.pathComponents where component != "/" {
      path += "/" + component
      if mkdir(path, 0o777) != 0 && errno != EEXIST {
        throw failure("cannot create \(DisplayText.escaping(path)): \(systemWords(errno))")
      }
    }
  }

  private static func failure(_ message: String) -> CLIFailure {
    CLIFailure(status: .usage, message: message, code: .invalidDir)
  }
}
