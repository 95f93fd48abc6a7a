import FerryWire
import Testing

/// OFFER's digest byte and FILE_END's two digest lengths (docs/PROTOCOL.md, "Resources",
/// version 3).
@Suite("Wire: the digest choice")
struct DigestChoiceWireTests {
  static let file = OfferedFile(
    path: "a", size: 1, modificationSeconds: 0, modificationNanoseconds: 0, mode: 0o644)

  @Test("an XXH3 offer carries one more byte; an offer without it is SHA-256")
  func offerByte() throws {
    let sha = ResourceMessage.offer(channel: 1, files: [Self.file])
    let xxh3 = ResourceMessage.offer(channel: 1, files: [Self.file], digest: .xxh3)
    #expect(xxh3.frame.payload == sha.frame.payload + [1])
    #expect(try ResourceMessage(frame: xxh3.frame) == xxh3)
    #expect(try ResourceMessage(frame: sha.frame) == sha)
  }

  @Test(
    "a digest byte of 0 (SHA-256 is never written), an unknown one, or two are protocol errors",
    arguments: [[0], [2], [255], [1, 1]] as [[UInt8]])
  func badByte(extra: [UInt8]) {
    let payload = ResourceMessage.offer(channel: 1, files: [Self.file]).frame.payload + extra
    #expect(throws: WireError.self) {
      try ResourceMessage(frame: Frame(type: .offer, channel: 1, payload: payload))
    }
  }

  @Test("FILE_END carries 16 or 32 digest bytes, nothing else", arguments: 0...40)
  func fileEndLength(length: Int) {
    let frame = Frame(
      type: .fileEnd, channel: 1, payload: [0, 0, 0, 7] + [UInt8](repeating: 9, count: length))
    let decoded = try? ResourceMessage(frame: frame)
    if length == 16 || length == 32 {
      #expect(
        decoded
          == .fileEnd(channel: 1, file: 7, digest: [UInt8](repeating: 9, count: length)))
    } else {
      #expect(decoded == nil, "\(length) bytes")
    }
  }

  @Test("HOLE round-trips; a hole of 0 bytes or over 1 GiB, or a short frame, is refused")
  func hole() throws {
    let message = ResourceMessage.hole(channel: 3, file: 9, length: 1 << 30)
    #expect(message.frame.payload.count == 12)
    #expect(try ResourceMessage(frame: message.frame) == message)
    for length: UInt64 in [0, (1 << 30) + 1, ResourceMessage.maximumFileSize, .max] {
      #expect(throws: WireError.self, "\(length)") {
        try ResourceMessage(frame: ResourceMessage.hole(channel: 3, file: 0, length: length).frame)
      }
    }
    #expect(throws: WireError.self) {
      try ResourceMessage(frame: Frame(type: .hole, channel: 3, payload: [0, 0, 0, 0, 1]))
    }
  }

  @Test(
    "an empty folder is a mode with the folder bit and size 0; with data, or other type bits, it is refused"
  )
  func folderEntries() throws {
    var folder = Self.file
    folder.size = 0
    folder.mode = OfferedFile.folderBit | 0o750
    let message = ResourceMessage.offer(channel: 1, files: [folder], digest: .xxh3)
    #expect(try ResourceMessage(frame: message.frame) == message)
    #expect(folder.isFolder && !Self.file.isFolder)
    for (size, mode): (UInt64, UInt32) in [
      (1, OfferedFile.folderBit | 0o755), (0, 0o100644), (0, 0o120777),
      (0, OfferedFile.folderBit | 0o10000),
    ] {
      var bad = Self.file
      (bad.size, bad.mode) = (size, mode)
      #expect(throws: WireError.self, "\(size) \(String(mode, radix: 8))") {
        try ResourceMessage(frame: ResourceMessage.offer(channel: 1, files: [bad]).frame)
      }
    }
  }
}
