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
    let hasher = BackgroundHasher(
      ContentHasher(.sha256), size: size, on: DispatchQueue(label: "test"))
    for piece in pieces { hasher.update(ByteBuffer(bytes: piece)) }
    #expect(hasher.finalize() == expected())
  }

  @Test(
    "from async code too: the same digest, the backlog waited for by suspending",
    arguments: [0, BackgroundHasher.backgroundThreshold])
  func asyncDigest(size: UInt64) async {
    let hasher = BackgroundHasher(
      ContentHasher(.sha256), size: size, on: DispatchQueue(label: "test"))
    for piece in pieces { await hasher.update(ByteBuffer(bytes: piece)) }
    #expect(await hasher.finalize() == expected())
  }

  @Test("continuing a hasher covers the bytes it had already seen (resume)")
  func continuing() {
    let prefix = Array("staged before the interruption".utf8)
    var start = ContentHasher(.sha256)
    start.update(contentsOf: prefix)
    let hasher = BackgroundHasher(start, size: .max, on: DispatchQueue(label: "test"))
    for piece in pieces { hasher.update(ByteBuffer(bytes: piece)) }
    #expect(hasher.finalize() == expected(after: prefix))
  }

  @Test(
    "XXH3-128 in the background and inline equals XXH3-128 of the whole, in one piece",
    arguments: [0, BackgroundHasher.backgroundThreshold])
  func xxh3(size: UInt64) {
    let hasher = BackgroundHasher(
      ContentHasher(.xxh3), size: size, on: DispatchQueue(label: "test"))
    for piece in pieces { hasher.update(ByteBuffer(bytes: piece)) }
    var whole = ContentHasher(.xxh3)
    whole.update(contentsOf: pieces.flatMap { $0 })
    #expect(hasher.finalize() == whole.finalize())
  }
}

@Suite("ContentHasher")
struct ContentHasherTests {
  @Test("XXH3-128 digests are xxhsum -H2's (the canonical big-endian form)")
  func xxh3Vectors() {
    // Printed by xxhsum 0.8.1 (Debian's xxhash): `printf '' | xxhsum -H2`, and of "abc".
    var empty = ContentHasher(.xxh3)
    #expect(Hex.lowercase(empty.finalize()) == "99aa06d3014798d86001c324468d497f")
    empty.update(contentsOf: Array("abc".utf8))
    #expect(Hex.lowercase(empty.finalize()) == "06b05ab6733a618578af5f94892f3950")
  }

  @Test(
    "a copy goes on on its own: updating one leaves the other as it was",
    arguments: ChecksumAlgorithm.allCases)
  func copies(checksum: ChecksumAlgorithm) {
    var first = ContentHasher(checksum)
    first.update(contentsOf: Array("staged".utf8))
    var second = first
    second.update(contentsOf: Array(" and more".utf8))
    var fresh = ContentHasher(checksum)
    fresh.update(contentsOf: Array("staged".utf8))
    #expect(first.finalize() == fresh.finalize())
    #expect(second.finalize() != first.finalize())
    #expect(first.finalize().count == checksum.digestSize)
    first.update(contentsOf: Array(" and more".utf8))
    #expect(first.finalize() == second.finalize())
  }

  @Test("SHA-256 digests are sha256sum's")
  func sha256Vector() {
    var hasher = ContentHasher(.sha256)
    hasher.update(contentsOf: Array("abc".utf8))
    #expect(
      Hex.lowercase(hasher.finalize())
        == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  }
}
