import FerryWire
import NIOCore
import Testing

@testable import Ferry

/// Streamed files in an OFFER (docs/PROTOCOL.md, "Resources", version 5): standard input sent
/// as it is read, its size known only at its end.
@Suite("Wire: streamed files (version 5)")
struct StreamedFilesWireTests {
  static let stream = OfferedFile(
    path: "stdin", size: 0, modificationSeconds: 0, modificationNanoseconds: 0,
    mode: OfferedFile.streamBit | 0o600)

  @Test(
    "a streamed file is the stream bit with size 0; with a size, or other type bits, it is refused")
  func entries() throws {
    let message = ResourceMessage.offer(channel: 1, files: [Self.stream], digest: .xxh3)
    #expect(try ResourceMessage(frame: message.frame) == message)
    #expect(Self.stream.isStreamed && !Self.stream.isFolder)
    for (size, mode): (UInt64, UInt32) in [
      (1, OfferedFile.streamBit | 0o600), (ResourceMessage.maximumFileSize, OfferedFile.streamBit),
      (0, OfferedFile.streamBit | OfferedFile.folderBit), (0, OfferedFile.streamBit | 0o100000),
      (0, 0o020644), (0, 0o140644), (0, UInt32.max),
    ] {
      var bad = Self.stream
      (bad.size, bad.mode) = (size, mode)
      #expect(throws: WireError.self, "\(size) \(String(mode, radix: 8))") {
        try ResourceMessage(frame: ResourceMessage.offer(channel: 1, files: [bad]).frame)
      }
    }
  }

  @Test("a version 4 link refuses an offer with a streamed file; version 5 takes it")
  func versions() throws {
    let old = try MultiplexerLimitTests.Link()
    old.multiplexer.protocolVersion = 4
    old.multiplexer.onOffer = { _, _, _ in { _ in } }
    try old.read(ResourceMessage.offer(channel: 1, files: [Self.stream], digest: .xxh3).frame)
    #expect(old.violation?.contains("a streamed file in a version 4 OFFER") == true, "\(old.all)")

    let current = try MultiplexerLimitTests.Link()
    current.multiplexer.protocolVersion = 5
    let offered = MultiplexerLimitTests.Link.Box<[OfferedFile]>([])
    current.multiplexer.onOffer = { _, files, _ in
      offered.value = files
      return { _ in }
    }
    try current.read(ResourceMessage.offer(channel: 1, files: [Self.stream], digest: .xxh3).frame)
    #expect(current.violation == nil, "\(current.all)")
    #expect(offered.value == [Self.stream])
  }
}
