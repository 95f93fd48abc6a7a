import Ferry
import FerryAgent
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `ferry receive --stdout`: the one file received, written to standard output once it is
/// complete and verified (SHA-256), then removed from the staging folder. A pipe reader
/// (`| tar x`) gets all of the file or none of it, never a corrupt half.
final class StandardOutputSink: Sendable {
  /// The verified file, staged (received with `relocate: false`) — or one already in the
  /// destination with the same content, which stays — and whether to remove it once written.
  private let received = Mutex<(url: URL, remove: Bool)?>(nil)
  /// The private folder that holds the staging when `--dir` was not given; removed at the end.
  let privateFolder: URL?

  init(privateFolder: URL?) {
    self.privateFolder = privateFolder
  }

  /// Makes a private staging folder in `$TMPDIR` (mode 0700).
  ///
  /// - Throws: ``CLIFailure`` (usage) when it cannot.
  static func makePrivateFolder() throws(CLIFailure) -> URL {
    do {
      return try PrivateFiles.makeFolder(prefix: "ferry-stdout")
    } catch {
      throw CLIFailure(
        status: .usage,
        message: "cannot make a temporary folder for --stdout: \(systemWords(error.code))",
        code: .invalidDir)
    }
  }

  /// Records where the verified file is; `remove`: it is ours to remove once written.
  func received(_ url: URL, remove: Bool = true) {
    received.withLock { $0 = (url, remove) }
  }

  /// Copies the verified file to standard output and removes it; nil when it all went out.
  func deliver() -> CLIFailure? {
    guard let (url, remove) = received.withLock({ $0 }) else {
      return CLIFailure(
        status: .transferFailed, message: "no verified file arrived to write to standard output",
        code: .transferFailed)
    }
    defer { if remove { try? FileManager.default.removeItem(at: url) } }
    let input = open(url.path, O_RDONLY | O_CLOEXEC)
    guard input >= 0 else { return Self.failure("cannot read the received file", errno) }
    defer { close(input) }
    do {
      try PrivateFiles.copy(from: input, to: 1)
      return nil
    } catch {
      switch error {
      case .read(let code): return Self.failure("cannot read the received file", code)
      case .write(let code): return Self.failure("cannot write to standard output", code)
      }
    }
  }

  /// Removes the private staging folder, if one was made. Any thread.
  func removePrivateFolder() {
    if let privateFolder { try? FileManager.default.removeItem(at: privateFolder) }
  }

  private static func failure(_ what: String, _ code: Int32) -> CLIFailure {
    CLIFailure(
      status: .transferFailed, message: "\(what): \(systemWords(code))",
      code: .transferFailed)
  }
}
