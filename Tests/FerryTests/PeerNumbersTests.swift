import Foundation
import Testing

@testable import Ferry

/// Every number a peer sends is range-checked where it is decoded: sizes, their sums, times.
@Suite("Numbers and text from peers")
struct PeerNumbersTests {
  func offer(_ files: [(size: UInt64, seconds: Int64)]) -> Frame {
    ResourceMessage.offer(
      channel: 1,
      files: files.enumerated().map { index, file in
        OfferedFile(
          path: "f\(index)", size: file.size, modificationSeconds: file.seconds,
          modificationNanoseconds: 0, mode: 0o644)
      }
    ).frame
  }

  @Test("sizes up to 2^62 and totals up to 2^62 decode; anything larger is a protocol error")
  func sizes() throws {
    _ = try ResourceMessage(frame: offer([(1 << 62, 0)]))
    _ = try ResourceMessage(frame: offer([(1 << 61, 0), (1 << 61, 0)]))
    let tooLarge: [[(size: UInt64, seconds: Int64)]] = [
      [((1 << 62) + 1, 0)], [(1 << 63, 0)], [(UInt64.max, 0)],
      [(1 << 62, 0), (1, 0)], [(UInt64.max / 2, 0), (UInt64.max / 2 + 2, 0)],
    ]
    for files in tooLarge {
      #expect(throws: WireError.self) { try ResourceMessage(frame: offer(files)) }
    }
  }

  @Test("modification times beyond ±2^38 seconds are a protocol error")
  func times() throws {
    _ = try ResourceMessage(frame: offer([(1, -(1 << 38))]))
    _ = try ResourceMessage(frame: offer([(1, 1 << 38)]))
    let outside: [Int64] = [.min, .max, (1 << 38) + 1, -(1 << 38) - 1]
    for seconds in outside {
      #expect(throws: WireError.self) { try ResourceMessage(frame: offer([(1, seconds)])) }
    }
  }

  @Test("an offer count larger than the payload can hold does not make the decoder allocate it")
  func hugeCount() {
    var payload: [UInt8] = []
    payload.appendBigEndian(UInt32(ResourceMessage.maximumFiles))
    #expect(throws: WireError.truncated(.offer)) {
      try ResourceMessage(frame: Frame(type: .offer, channel: 1, payload: payload))
    }
  }
}
