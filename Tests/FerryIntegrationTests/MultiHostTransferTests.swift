import Crypto
import Ferry
import Foundation
import Synchronization
import Testing

/// Data, streams and files between namespace hosts over the bridge, with real TLS: this
/// process on host a, a `ferry-test-peer` on host b.
@Suite(
  "Transfers across namespace hosts", .timeLimit(.minutes(3)), .needsToRunOnHostA, .serialized,
  .endsItsProcesses)
struct MultiHostTransferTests {
  /// Starts `ferry-test-peer MODE NAME TYPE [ARGS]` on host b, finds and joins it.
  func joinPeerOnB(_ mode: String, _ extra: [String] = []) async throws -> (
    process: ChildProcess, session: Session, peer: PeerID
  ) {
    let type = Harness.uniqueServiceType()
    let name = "b-\(mode)-\(Int.random(in: 1000...9999))"
    let process = try ChildProcess(
      Harness.on!, ["b", Harness.testPeerBinary, mode, name, type] + extra)
    _ = await process.waitForLine { $0.contains("\"listening\"") }
    let browser = try Browser(serviceType: try ServiceType(type))
    let found = try await discover(name, with: EventRecorder(browser.events))
    #expect(found.addresses.contains { $0.ip == Harness.hostAddresses["b"] })
    let session = try Session(identity: makeIdentity(), displayName: "host-a")
    let peer = try await browser.invite(found, to: session)
    return (process, session, peer)
  }

  @Test("data messages, reliable and unreliable, and a stream with a slow reader, across hosts")
  func dataAndStreams() async throws {
    let (process, session, peer) = try await joinPeerOnB("echo")
    defer { process.signal(SIGKILL) }
    var replies = session.messages.makeAsyncIterator()
    for index in 0..<50 {
      try await session.send(Array("reliable \(index)".utf8), to: [peer])
    }
    for index in 0..<50 {
      let reply = try await replies.next()
      #expect(reply.map { String(decoding: $0.data, as: UTF8.self) } == "reliable \(index)")
    }
    let dropped = try await session.send(Array("best effort".utf8), to: [peer], mode: .unreliable)
    if dropped.isEmpty {
      let reply = try await replies.next()
      #expect(reply.map { String(decoding: $0.data, as: UTF8.self) } == "best effort")
    }

    // 12 MiB to a reader that sleeps 20 ms per chunk: the writer is held back by the window.
    let data = (0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 9)) }
    let stream = try await session.startStream(named: "across", to: peer)
    let started = ContinuousClock.now
    var offset = 0
    while offset < data.count {
      let end = min(offset + (1 << 20), data.count)
      try await stream.write(Array(data[offset..<end]))
      offset = end
    }
    try await stream.finish()
    let writing = ContinuousClock.now - started
    let answer = try await replies.next()
    let digest = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    #expect(
      answer.map { String(decoding: $0.data, as: UTF8.self) }
        == "stream across \(data.count) \(digest)")
    print(
      "12 MiB stream to a slow reader on host b: the writer took \(seconds(writing)) s (held back by the window)"
    )
    // The reader takes 20 ms per 256 KiB chunk; the writer may run only one window (1 MiB)
    // ahead, so it needs at least the time the reader spends on the other 11 MiB (~0.88 s).
    // Without backpressure it would finish in a few tens of milliseconds.
    #expect(writing > .milliseconds(800))
  }

  @Test("a single large file and a mixed folder tree, byte-identical on host b")
  func files() async throws {
    let destination = try temporaryDirectory("b-dst")
    let (process, session, peer) = try await joinPeerOnB("receive", [destination.path])
    defer { process.signal(SIGKILL) }
    let source = try temporaryDirectory("a-src")
    let root = source.appendingPathComponent("bundle")
    try writeFile(root.appendingPathComponent("large.bin"), size: 24 << 20, seed: 11)
    try writeFile(root.appendingPathComponent("empty"), size: 0)
    try writeFile(root.appendingPathComponent("docs/read me.txt"), size: 4000, seed: 12)
    for index in 0..<200 {
      try writeFile(
        root.appendingPathComponent("small/\(index % 7)/f\(index)"), size: index * 37,
        seed: UInt64(index))
    }
    let transfer = try session.sendResources(try ResourceItem.expanding([root]), to: peer)
    let results = try await transfer.result()
    #expect(results.count == 203)
    #expect(results.allSatisfy { $0.status == .stored })
    #expect(try tree(destination.appendingPathComponent("bundle")) == tree(root))
    #expect(await process.waitForLine { $0.contains("\"received\"") } != nil)
  }
}
