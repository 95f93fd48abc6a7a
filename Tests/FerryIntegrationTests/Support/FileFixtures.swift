import Crypto
import Foundation
import Synchronization

/// A fresh temporary directory, removed when the test process exits (a full run writes
/// gigabytes of transfers; left behind, a few runs fill a disk).
func temporaryDirectory(_ label: String) throws -> URL {
  _ = removalAtExit
  let url = URL(fileURLWithPath: NSTemporaryDirectory())
    .appendingPathComponent("ferry-\(label)-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  madeDirectories.withLock { $0.append(url.path) }
  return url
}

/// What ``temporaryDirectory(_:)`` made.
private let madeDirectories = Mutex<[String]>([])

/// Registers, once, the removal of ``madeDirectories`` at exit.
private let removalAtExit: Void = {
  atexit {
    for path in madeDirectories.withLock({ $0 }) {
      try? FileManager.default.removeItem(atPath: path)
    }
  }
}()

/// Writes `size` pseudo-random bytes (deterministic per seed) to `url`.
func writeFile(_ url: URL, size: Int, seed: UInt64 = 1) throws {
  try FileManager.default.createDirectory(
    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
  var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
  var bytes = [UInt8](repeating: 0, count: size)
  for index in 0..<size {
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    bytes[index] = UInt8(truncatingIfNeeded: state)
  }
  try Data(bytes).write(to: url)
}

/// A file of `size` zeros that the filesystem allocated but never wrote (posix_fallocate):
/// quick to make and to read, like a sparse file, but without holes, so that it is sent as
/// data (a sparse file's holes now cross as HOLE frames, in no time).
func writeAllocated(_ url: URL, size: Int) throws {
  try FileManager.default.createDirectory(
    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
  let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
  guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
  defer { close(fd) }
  let result = posix_fallocate(fd, 0, off_t(size))
  guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
}

/// SHA-256 of a file, hex.
func sha256(of url: URL) throws -> String {
  let data = try Data(contentsOf: url)
  return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

/// XXH3-128 of a file, hex, as Debian's `xxhsum -H2` (a program of its own, not Ferry's code)
/// computes it.
func xxh3(of url: URL) throws -> String {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/xxhsum")
  process.arguments = ["-H2", url.path]
  let pipe = Pipe()
  process.standardOutput = pipe
  try process.run()
  let output = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return String(decoding: output, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}

/// Every regular file under `root`, relative path → SHA-256 (staging excluded).
func tree(_ root: URL) throws -> [String: String] {
  var result: [String: String] = [:]
  guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
  else {
    return result
  }
  let prefix = root.standardizedFileURL.path
  for case let file as URL in walker {
    var isDirectory: ObjCBool = false
    _ = FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory)
    let relative = String(file.standardizedFileURL.path.dropFirst(prefix.count + 1))
    if !isDirectory.boolValue && !relative.hasPrefix(".ferry-partial") {
      result[relative] = try sha256(of: file)
    }
  }
  return result
}
