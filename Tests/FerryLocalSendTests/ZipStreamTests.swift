import Foundation
import Testing

@testable import FerryLocalSend

/// The zip archive `ferry send --web` streams, read back by Python's zipfile (a reader of its
/// own): names with folders and non-ASCII letters, an empty file, CRC-32 checked.
@Suite("The streamed zip archive")
struct ZipStreamTests {
  @Test("entries written as they go read back byte for byte, their CRCs right, its length known")
  func roundTrip() throws {
    let entries: [(String, [UInt8])] = [
      ("notes.txt", Array("hello, zip".utf8)),
      ("photos/2024/été.jpg", (0..<70_000).map { UInt8($0 % 251) }),
      ("photos/empty", []),
    ]
    var dry = ZipStream()
    for (path, bytes) in entries {
      _ = dry.header(path: path, size: UInt64(bytes.count), modified: 0)
      _ = dry.descriptor(crc: 0)
    }
    _ = dry.end()
    var stream = ZipStream()
    var archive: [UInt8] = []
    for (path, bytes) in entries {
      archive += stream.header(path: path, size: UInt64(bytes.count), modified: 1_700_000_000)
      archive += bytes
      let crc = bytes.withUnsafeBytes { ZipStream.crc32(0, $0) }
      archive += stream.descriptor(crc: crc)
    }
    archive += stream.end()
    #expect(UInt64(archive.count) == dry.written, "the length given before the first byte")
    #expect(stream.written == dry.written)
    let file = NSTemporaryDirectory() + "ferry-zip-\(UUID().uuidString).zip"
    try Data(archive).write(to: URL(fileURLWithPath: file))
    defer { try? FileManager.default.removeItem(atPath: file) }
    let check = Process()
    check.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    check.arguments = [
      "-c",
      """
      import sys, zipfile, hashlib
      z = zipfile.ZipFile(sys.argv[1])
      assert z.testzip() is None
      for i in z.infolist():
          print(i.filename, i.file_size, hashlib.sha256(z.read(i)).hexdigest())
      """, file,
    ]
    let pipe = Pipe()
    check.standardOutput = pipe
    try check.run()
    check.waitUntilExit()
    #expect(check.terminationStatus == 0)
    let listed = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      .split(separator: "\n").map(String.init)
    #expect(listed.count == entries.count, "\(listed)")
    for ((path, bytes), line) in zip(entries, listed) {
      let digest = Data(bytes).sha256Hex
      #expect(line == "\(path) \(bytes.count) \(digest)", "\(line)")
    }
  }

  @Test("CRC-32 of the check string is the standard one")
  func crc() {
    let crc = Array("123456789".utf8).withUnsafeBytes { ZipStream.crc32(0, $0) }
    #expect(crc == 0xCBF4_3926)
    // Continued over two pieces, the same as at once.
    let whole = Array("hello world".utf8)
    let once = whole.withUnsafeBytes { ZipStream.crc32(0, $0) }
    let first = whole[..<5].withUnsafeBytes { ZipStream.crc32(0, $0) }
    let both = whole[5...].withUnsafeBytes { ZipStream.crc32(first, $0) }
    #expect(once == both)
  }
}

extension Data {
  /// SHA-256, lower-case hex, by Debian's sha256sum (a program of its own).
  fileprivate var sha256Hex: String {
    let file = NSTemporaryDirectory() + "ferry-sha-\(UUID().uuidString)"
    try? write(to: URL(fileURLWithPath: file))
    defer { try? FileManager.default.removeItem(atPath: file) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [file]
    let pipe = Pipe()
    process.standardOutput = pipe
    try? process.run()
    process.waitUntilExit()
    let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return String(out.prefix(64))
  }
}
