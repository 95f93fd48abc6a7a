import Ferry
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
    var template = Array(
      (FileManager.default.temporaryDirectory.path + "/ferry-stdout-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else {
      throw CLIFailure(
        status: .usage,
        message: "cannot make a temporary folder for --stdout: "
          + String(cString: strerror(errno)).lowercased(),
        code: .invalidDir)
    }
    return URL(fileURLWithPath: String(cString: made), isDirectory: true)
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
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
      if count == 0 { return nil }
      if count < 0 {
        if errno == EINTR { continue }
        return Self.failure("cannot read the received file", errno)
      }
      var written = 0
      while written < count {
        let done = buffer.withUnsafeBytes { write(1, $0.baseAddress! + written, count - written) }
        if done < 0 {
          if errno == EINTR { continue }
          return Self.failure("cannot write to standard output", errno)
        }
        written += done
      }
    }
  }

  /// Removes the private staging folder, if one was made. Any thread.
  func removePrivateFolder() {
    if let privateFolder { try? FileManager.default.removeItem(at: privateFolder) }
  }

  private static func failure(_ what: String, _ code: Int32) -> CLIFailure {
    CLIFailure(
      status: .transferFailed, message: "\(what): \(String(cString: strerror(code)).lowercased())",
      code: .transferFailed)
  }
}
