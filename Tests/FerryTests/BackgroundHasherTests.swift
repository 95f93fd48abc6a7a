import Crypto
import Dispatch
import NIOCore
import Testing

@testable import Ferry

@Suite("BackgroundHasher")
struct BackgroundHasherTests {
  /// 20 MiB in uneven pieces: more than the backlog, so updates also wait for the queue.
  let pieces: [[UInt8]] = (0..<90).map { index in
    [UInt8](repeating: UInt8(truncatingIfNeeded: index &* 37), count: index * 5_000 + 1)
  }

  func expected(after prefix: [UInt8] = []) -> [UInt8] {
    var hasher = SHA256()
    hasher.update(data: prefix)
    for piece in pieces { hasher.update(data: piece) }
    return Array(hasher.finalize())
  }

  @Test(
    "background and inline hashing give SHA-256 of the bytes in order",
    arguments: [0, BackgroundHasher.backgroundThreshold])
  func digest(size: UInt64) {
    let hasher = BackgroundHasher(size: size, on: DispatchQueue(label: "test"))
    for piece in pieces { hasher.update(ByteBuffer(bytes: piece)) }
    #expect(hasher.finalize() == expected())
  }

  @Test(
    "from async code too: the same digest, the backlog waited for by suspending",
    arguments: [0, BackgroundHasher.backgroundThreshold])
  func asyncDigest(size: UInt64) async {
    let hasher = BackgroundHasher(size: size, on: DispatchQueue(label: "test"))
    for piece in pieces { await hasher.update(ByteBuffer(bytes: piece)) }
    #expect(await hasher.finalize() == expected())
  }

  @Test("continuing a hasher covers the bytes it had already seen (resume)")
  func continuing() {
    let prefix = Array("staged before the interruption".utf8)
    var start = SHA256()
    start.update(data: prefix)
    let hasher = BackgroundHasher(
      continuing: start, size: .max, on: DispatchQueue(label: "test"))
    for piece in pieces { hasher.update(ByteBuffer(bytes: piece)) }
    #expect(hasher.finalize() == expected(after: prefix))
  }
}
