import FerryWire
import Foundation
import Testing

@testable import Ferry

/// Streamed items (``ResourceItem/init(streamingFrom:path:)``): a pipe sent as it is written,
/// between two sessions over loopback TLS; the receiver's space reserved as the stream grows.
@Suite("Streamed resources", .timeLimit(.minutes(3)), .endsItsProcesses)
struct StreamedResourceTests {
  /// A FIFO and the test's end of it (read-write: neither end waits for the other to open;
  /// closing it ends the stream).
  func pipe(_ name: String) throws -> (url: URL, writer: Int32) {
    let url = try temporaryDirectory(name).appendingPathComponent("pipe")
    guard mkfifo(url.path, 0o600) == 0 else { throw POSIXError(.EIO) }
    let writer = open(url.path, O_RDWR | O_CLOEXEC)
    guard writer >= 0 else { throw POSIXError(.EIO) }
    return (url, writer)
  }

  /// Writes `count` bytes of a pattern to `fd` (non-blocking: waits while the pipe is full);
  /// false when the pipe is broken or the task is cancelled first.
  @discardableResult
  func write(_ fd: Int32, count: Int, seed: Int) async -> Bool {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    let block = (0..<(1 << 16)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed) }
    var left = count
    var offset = 0
    while left > 0 {
      let take = min(left, block.count - offset)
      let written = block.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, take) }
      if written < 0 && errno == EAGAIN {
        if Task.isCancelled { return false }
        try? await Task.sleep(for: .milliseconds(5))
        continue
      }
      if written <= 0 { return false }
      left -= written
      offset = (offset + written) % block.count
    }
    return true
  }

  @Test("a pipe arrives whole, its first bytes before it ends, its size what came")
  func arrivesAsWritten() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("stream-lib-dst")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let events = EventRecorder(pair.advertiser.resourceEvents)
    let (url, writer) = try pipe("stream-lib")
    var open = true
    defer { if open { close(writer) } }
    let transfer = try pair.inviter.sendResources(
      [ResourceItem(streamingFrom: url, path: "s.bin")], to: pair.advertiserPeer)
    let offered = try #require(
      await events.first {
        if case .offerReceived = $0 { return true }
        return false
      })
    guard case .offerReceived(let incoming) = offered.record.element else { return }
    #expect(incoming.streamed == ["s.bin"])
    await write(writer, count: 2 << 20, seed: 1)
    // Half the stream is there while its writer still holds it open.
    var seen: Int64 = 0
    for await snapshot in incoming.progress.snapshots {
      #expect(!snapshot.totalIsKnown)
      seen = snapshot.bytes
      if seen >= 2 << 20 { break }
    }
    #expect(seen >= 2 << 20)
    await write(writer, count: 1 << 20, seed: 2)
    close(writer)
    open = false
    let results = try await transfer.result()
    #expect(results.map(\.status) == [.stored])
    #expect(transfer.progress.totalBytes == 3 << 20)
    let saved = destination.appendingPathComponent("s.bin")
    var expected = Data()
    for (count, seed) in [(2 << 20, 1), (1 << 20, 2)] {
      let block = (0..<(1 << 16)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed) }
      for _ in 0..<(count / block.count) { expected.append(contentsOf: block) }
    }
    #expect(try Data(contentsOf: saved) == expected)
    #expect(
      (try? FileManager.default.contentsOfDirectory(
        atPath: destination.appendingPathComponent(".ferry-partial").path))?.isEmpty ?? true)
  }

  @Test("a stream that outgrows the free space ends the offer (not enough space); nothing stays")
  func outgrowsTheDisk() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("stream-small")
    let mounted = try await run(
      "/bin/mount", ["-t", "tmpfs", "-o", "size=96m", "tmpfs", destination.path])
    try #require(mounted.status == 0, "\(mounted.stderr)")
    defer { Task { _ = try? await run("/bin/umount", ["-l", destination.path]) } }
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let (url, writer) = try pipe("stream-big")
    defer { close(writer) }
    let transfer = try pair.inviter.sendResources(
      [ResourceItem(streamingFrom: url, path: "huge.bin")], to: pair.advertiserPeer)
    let feeding = Task { await write(writer, count: 200 << 20, seed: 3) }
    do {
      _ = try await transfer.result()
      Issue.record("a stream larger than the disk was stored")
    } catch {
      guard case .cancelledByPeer(let reason) = error else {
        Issue.record("expected the receiver to end it, got \(error)")
        return
      }
      #expect(reason.contains("not enough space"), "\(reason)")
    }
    feeding.cancel()
    _ = await feeding.value
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: destination.path).filter {
        $0 != ".ferry-partial"
      }.isEmpty)
    #expect(
      (try? FileManager.default.contentsOfDirectory(
        atPath: destination.appendingPathComponent(".ferry-partial").path))?.isEmpty ?? true)
  }

  @Test("a writer quiet for longer than the stall limit: empty CHUNKs keep the offer alive")
  func quietWriter() async throws {
    // 8 s, not 2: empty CHUNKs go every quarter of it, so a loaded machine's delays do not
    // pass for a stall; quiet for 20 s, more than twice the limit.
    var timeouts = ConnectionTimeouts()
    timeouts.transferStall = .seconds(8)
    let pair = try await ConnectedPair.make(timeouts: timeouts)
    defer { pair.close() }
    let destination = try temporaryDirectory("stream-quiet")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let (url, writer) = try pipe("stream-quiet-in")
    var open = true
    defer { if open { close(writer) } }
    let transfer = try pair.inviter.sendResources(
      [ResourceItem(streamingFrom: url, path: "late.txt")], to: pair.advertiserPeer)
    await write(writer, count: 10, seed: 4)
    try await Task.sleep(for: .seconds(20))
    await write(writer, count: 10, seed: 5)
    close(writer)
    open = false
    let results = try await transfer.result()
    #expect(results.map(\.status) == [.stored])
    let size = try FileManager.default.attributesOfItem(
      atPath: destination.appendingPathComponent("late.txt").path)[.size]
    #expect(size as? Int == 20)
  }

  @Test("a HOLE in a streamed file ends the offer; nothing of it stays staged or placed")
  func holeInStream() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("stream-hole")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let events = EventRecorder(pair.advertiser.resourceEvents)
    let channel: UInt32 = 1001  // odd: the inviter's
    let link = try pair.inviter.link(to: pair.advertiserPeer)
    let entry = OfferedFile(
      path: "s", size: 0, modificationSeconds: 0, modificationNanoseconds: 0,
      mode: OfferedFile.streamBit | 0o600)
    for frame in [
      ResourceMessage.offer(channel: channel, files: [entry], digest: .xxh3).frame,
      ResourceMessage.chunk(channel: channel, file: 0, bytes: [1, 2, 3]).frame,
      ResourceMessage.hole(channel: channel, file: 0, length: 1 << 30).frame,
    ] {
      link.onMultiplexer { $0.answerOffer(frame) }
    }
    let finished = await events.first {
      if case .offerFinished = $0 { return true }
      return false
    }
    guard case .offerFinished(_, let error?)? = finished?.record.element else {
      Issue.record("the offer did not fail: \(events.all.map(\.element))")
      return
    }
    #expect("\(error)".contains("HOLE"), "\(error)")
    #expect(!FileManager.default.fileExists(atPath: destination.appendingPathComponent("s").path))
    #expect(
      (try? FileManager.default.contentsOfDirectory(
        atPath: destination.appendingPathComponent(".ferry-partial").path))?.isEmpty ?? true)
  }

  @Test(
    "a streamed file's staging left by a receiver that was killed is removed at once, not after days"
  )
  func leftByAKilledReceiver() throws {
    let destination = try temporaryDirectory("stream-left")
    let staging = try StagingArea(destination: destination)
    let name = staging.streamName(like: "0123456789abcdef0123456789abcdef.part")
    let (fd, _, _) = try staging.open(name)
    _ = Glibc.write(fd, "left", 4)
    close(fd)
    staging.release([name])
    let kept = "0123456789abcdef0123456789abcdee.part"
    let (other, _, _) = try staging.open(kept)
    close(other)
    let removed = staging.removeStale(olderThan: .seconds(7 * 86_400))
    #expect(removed.files == 1 && removed.bytes == 4)
    #expect(staging.stagedLength(kept) == 0)
    #expect(
      try FileManager.default.contentsOfDirectory(
        atPath: destination.appendingPathComponent(".ferry-partial").path) == [kept])
  }
}
