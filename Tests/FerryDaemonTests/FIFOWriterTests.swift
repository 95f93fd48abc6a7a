import Foundation
import Synchronization
import Testing

@testable import FerryDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The writing end of an uploaded file's FIFO, on real FIFOs: it waits for its reader, gives
/// up when told the send is over, and survives a reader that goes away (no SIGPIPE).
@Suite("An upload's FIFO writer")
struct FIFOWriterTests {
  static func fifo() throws -> String {
    let folder = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-fifo-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let path = folder.appendingPathComponent("0").path
    #expect(mkfifo(path, 0o600) == 0)
    return path
  }

  @Test("bytes pass to a reader that opens the FIFO after the writer started waiting")
  func waitsForItsReader() async throws {
    let path = try Self.fifo()
    let writer = FIFOWriter(path: path) { false }
    let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let reading = Task.detached { () -> [UInt8] in
      try? await Task.sleep(for: .milliseconds(200))
      let fd = open(path, O_RDONLY)
      defer { close(fd) }
      var out: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while true {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        out += buffer[..<count]
      }
      return out
    }
    try await writer.open()
    try await writer.write(bytes[...])
    await writer.close()
    #expect(await reading.value == bytes)
  }

  @Test("nobody reads and the send ends: the wait for a reader stops")
  func endedWhileWaitingForAReader() async throws {
    let over = Atomic<Bool>(false)
    let writer = FIFOWriter(path: try Self.fifo()) { over.load(ordering: .relaxed) }
    Task.detached {
      try? await Task.sleep(for: .milliseconds(300))
      over.store(true, ordering: .relaxed)
    }
    await #expect(throws: FIFOWriter.Failure.ended) { try await writer.open() }
  }

  @Test("a reader that stops reading with the FIFO full, then goes: an error, not SIGPIPE")
  func readerGone() async throws {
    let path = try Self.fifo()
    let reader = open(path, O_RDONLY | O_NONBLOCK)
    #expect(reader >= 0)
    let writer = FIFOWriter(path: path) { false }
    try await writer.open()
    Task.detached {
      try? await Task.sleep(for: .milliseconds(300))
      close(reader)
    }
    // More than a pipe holds: the write waits, then its reader is gone.
    await #expect(throws: FIFOWriter.Failure.self) {
      try await writer.write([UInt8](repeating: 1, count: 4 << 20)[...])
    }
    await writer.close()
  }

  @Test("a reader that waits and a send that ends: the full FIFO's write stops")
  func endedWhileFull() async throws {
    let path = try Self.fifo()
    let reader = open(path, O_RDONLY | O_NONBLOCK)
    defer { close(reader) }
    let over = Atomic<Bool>(false)
    let writer = FIFOWriter(path: path) { over.load(ordering: .relaxed) }
    try await writer.open()
    Task.detached {
      try? await Task.sleep(for: .milliseconds(300))
      over.store(true, ordering: .relaxed)
    }
    await #expect(throws: FIFOWriter.Failure.ended) {
      try await writer.write([UInt8](repeating: 1, count: 4 << 20)[...])
    }
    await writer.close()
  }

  @Test("a reader that will never come (the send reads a later file) ends the wait: skipped")
  func skippedFile() async throws {
    let first = try Self.fifo()
    let second = try Self.fifo()
    let later: Set = [URL(fileURLWithPath: second).resolvingSymlinksInPath().path]
    #expect(!BrowserUploads.holdsOpen(later))
    // The send, in this process, opens the second file's FIFO: it skipped the first.
    let reader = open(second, O_RDONLY | O_NONBLOCK)
    defer { close(reader) }
    #expect(BrowserUploads.holdsOpen(later))
    #expect(!BrowserUploads.holdsOpen([first]))
    let writer = FIFOWriter(
      path: first, ended: { false }, skipped: { BrowserUploads.holdsOpen(later) })
    await #expect(throws: FIFOWriter.Failure.skipped) { try await writer.open() }
  }
}
