import Ferry
import FerryAgent
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `ferry send -` when standard input cannot be sent as it is read (``StandardInputSource``):
/// read to its end into a private temporary file (a folder of its own in `$TMPDIR`, mode 0700)
/// and offered as one file named `--stdin-name` — for a terminal (whose Ctrl-D ends it before
/// anyone is asked at the other end) and for several receivers (each gets the whole file).
/// Removed when the command ends (Ctrl-C too).
final class StandardInputSpool: Sendable {
  /// The private folder holding the file.
  let folder: URL
  /// The file to offer.
  let item: ResourceItem

  /// Makes the private folder for standard input, to be read as `name` with ``read(note:)``.
  ///
  /// - Throws: ``CLIFailure`` (usage) for a name that is not one plain file name, or when
  ///   the folder cannot be made.
  init(name: String) throws(CLIFailure) {
    try Self.check(name: name)
    do {
      folder = try PrivateFiles.makeFolder(prefix: "ferry-stdin")
    } catch {
      throw Self.failure("cannot make a temporary folder for standard input", error.code)
    }
    item = ResourceItem(url: folder.appendingPathComponent(name), path: name)
  }

  /// Reads standard input to its end into the file; removes the folder if that fails.
  ///
  /// - Throws: ``CLIFailure`` (usage) when the file cannot be written (a full disk) or
  ///   standard input read.
  func read(note: (String) -> Void) throws(CLIFailure) {
    let file = item.url
    if isatty(0) == 1 { note("Reading standard input until Ctrl-D…") }
    let output = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard output >= 0 else {
      remove()
      throw Self.failure("cannot write \(file.path)", errno)
    }
    defer { close(output) }
    do {
      try PrivateFiles.copy(from: 0, to: output)
    } catch {
      remove()
      switch error {
      case .read(let code): throw Self.failure("cannot read standard input", code)
      case .write(let code):
        throw Self.failure("cannot keep standard input in \(folder.path)", code)
      }
    }
  }

  /// Checks that `name` (`--stdin-name`) is one plain file name.
  ///
  /// - Throws: ``CLIFailure`` (usage) for a name with a `/`, control characters, `.` or `..`.
  static func check(name: String) throws(CLIFailure) {
    guard !name.isEmpty, !name.contains("/"), name != ".", name != "..",
      (try? RelativePath(validating: name)) != nil
    else {
      throw CLIFailure(
        status: .usage,
        message: "--stdin-name '\(DisplayText.escaping(name))' is not a file name (one name, "
          + "no '/', no control characters)",
        code: .invalidPath)
    }
  }

  /// Removes the temporary folder and its file. Any thread; more than once is harmless.
  func remove() {
    try? FileManager.default.removeItem(at: folder)
  }

  private static func failure(_ what: String, _ code: Int32) -> CLIFailure {
    CLIFailure(status: .usage, message: "\(what): \(systemWords(code))", code: .cannotRead)
  }
}
