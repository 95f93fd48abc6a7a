import Crypto
import Ferry
import FerryWire
import Foundation
import Synchronization
import Testing

/// Data messages and streams between two sessions over real TLS (loopback).
@Suite("Data messages and streams", .timeLimit(.minutes(3)), .endsItsProcesses)
struct MessageAndStreamTests {
  @Test("reliable messages arrive in order, both ways, with their sender")
  func reliableMessages() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    for index in 0..<200 {
      try await pair.inviter.send(Array("m\(index)".utf8), to: [pair.advertiserPeer])
    }
    try await pair.advertiser.send(Array("reply".utf8), to: [pair.inviterPeer])
    var received: [String] = []
    for try await message in pair.advertiser.messages {
      #expect(message.peer == pair.inviterPeer)
      received.append(String(decoding: message.data, as: UTF8.self))
      if received.count == 200 { break }
    }
    #expect(received == (0..<200).map { "m\($0)" })
    var replies = pair.inviter.messages.makeAsyncIterator()
    let reply = try await replies.next()
    #expect(reply.map { String(decoding: $0.data, as: UTF8.self) } == "reply")
    #expect(reply?.peer == pair.advertiserPeer)
  }

  @Test("Data in, Data out: the Data forms send and read the same bytes")
  func dataForms() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let payload = Data("zoë ✓".utf8) + Data([0, 255])
    try await pair.inviter.send(payload, to: [pair.advertiserPeer])
    var iterator = pair.advertiser.messages.makeAsyncIterator()
    let message = try #require(try await iterator.next())
    #expect(message.bytes == payload)
    #expect(message.data == [UInt8](payload))
  }

  @Test("two readers of messages at once: each message reaches one of them, none hangs")
  func twoReaders() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let readers = (0..<2).map { _ in
      Task {
        var got: [String] = []
        for try await message in pair.advertiser.messages {
          let text = String(decoding: message.data, as: UTF8.self)
          if text == "end" { break }
          got.append(text)
        }
        return got
      }
    }
    try await Task.sleep(for: .milliseconds(100))
    for index in 0..<100 {
      try await pair.inviter.send(Array("m\(index)".utf8), to: [pair.advertiserPeer])
    }
    // One end marker per reader.
    for _ in 0..<2 { try await pair.inviter.send(Array("end".utf8), to: [pair.advertiserPeer]) }
    let all = try await readers[0].value + readers[1].value
    #expect(all.sorted() == (0..<100).map { "m\($0)" }.sorted())
  }

  @Test("a 1 MiB message is the limit; bigger, or to a stranger, is a typed error")
  func limits() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let big = [UInt8](repeating: 0xAB, count: ProtocolLimits.maximumMessageSize)
    try await pair.inviter.send(big, to: [pair.advertiserPeer])
    var iterator = pair.advertiser.messages.makeAsyncIterator()
    #expect(try await iterator.next()?.data == big)
    await #expect(throws: TransferError.messageTooLarge(byteCount: big.count + 1)) {
      try await pair.inviter.send(big + [0], to: [pair.advertiserPeer])
    }
    let stranger = try PeerID(displayName: "x", fingerprint: Identity.generate().fingerprint)
    await #expect(throws: TransferError.notConnected(stranger)) {
      try await pair.inviter.send([1], to: [stranger])
    }
  }

  @Test(
    "reliable sends wait for a receiver that does not read; unreliable ones are dropped, never waiting"
  )
  func backpressureAndDrops() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let payload = [UInt8](repeating: 1, count: 512 << 10)
    // Unreliable: the receiver reads nothing, so once its window is used up sends are dropped.
    var dropped = 0
    let started = ContinuousClock.now
    for _ in 0..<40 {
      dropped += try await pair.inviter.send(payload, to: [pair.advertiserPeer], mode: .unreliable)
        .count
    }
    #expect(ContinuousClock.now - started < .seconds(20), "unreliable sends blocked")
    #expect(dropped > 0 && dropped < 40, "dropped \(dropped) of 40")

    // Reliable: blocks until the receiver reads.
    let sent = Atomic<Int>(0)
    let sender = Task {
      for _ in 0..<4 {
        try await pair.inviter.send(payload, to: [pair.advertiserPeer])
        sent.add(1, ordering: .relaxed)
      }
    }
    try await Task.sleep(for: .milliseconds(500))
    #expect(sent.load(ordering: .relaxed) < 4, "a reliable sender did not wait for credit")
    var read = 0
    for try await _ in pair.advertiser.messages {
      read += 1
      if read == 40 - dropped + 4 { break }
    }
    try await sender.value
    #expect(sent.load(ordering: .relaxed) == 4)
  }

  @Test("a 6 MiB stream arrives byte-identical, and a slow reader holds the writer back")
  func streamWithBackpressure() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let data = (0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
    let written = Atomic<Int>(0)
    let read = Atomic<Int>(0)
    let maximumAhead = Atomic<Int>(0)
    let writer = Task {
      let stream = try await pair.inviter.startStream(named: "photo.raw", to: pair.advertiserPeer)
      var offset = 0
      while offset < data.count {
        let end = min(offset + 100_000, data.count)
        try await stream.write(Array(data[offset..<end]))
        offset = end
        written.store(end, ordering: .relaxed)
        let gap = end - read.load(ordering: .relaxed)
        if gap > maximumAhead.load(ordering: .relaxed) {
          maximumAhead.store(gap, ordering: .relaxed)
        }
      }
      try await stream.finish()
    }
    var streams = pair.advertiser.incomingStreams.makeAsyncIterator()
    let incoming = try #require(await streams.next())
    #expect(incoming.name == "photo.raw")
    #expect(incoming.peer == pair.inviterPeer)
    var hasher = SHA256()
    var count = 0
    for try await chunk in incoming.chunks {
      hasher.update(data: chunk)
      count += chunk.count
      read.store(count, ordering: .relaxed)
      if count < 2 << 20 { try await Task.sleep(for: .milliseconds(20)) }  // slow at first
    }
    try await writer.value
    #expect(count == data.count)
    #expect(Array(hasher.finalize()) == Array(SHA256.hash(data: data)))
    // The writer can be ahead by the stream window (1 MiB) plus what is in flight, never more.
    let ahead = maximumAhead.load(ordering: .relaxed)
    print("writer was at most \(ahead) bytes ahead of the slow reader")
    #expect(ahead <= (1 << 20) + 2 * TransferMessage.maximumChunkSize + 100_000)
  }

  @Test("cancelling from either end: the other end sees it, with the reason")
  func cancellation() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    var incoming = pair.advertiser.incomingStreams.makeAsyncIterator()

    // Receiver cancels: the writer's next writes fail.
    let first = try await pair.inviter.startStream(named: "one", to: pair.advertiserPeer)
    try await first.write([1, 2, 3])
    let one = try #require(await incoming.next())
    one.cancel(reason: "enough")
    var failure: TransferError?
    for _ in 0..<50 where failure == nil {
      do {
        try await first.write([UInt8](repeating: 0, count: 256 << 10))
      } catch {
        failure = error
      }
    }
    #expect(failure == .cancelledByPeer(reason: "enough"))

    // Sender cancels: the reader's sequence throws.
    let second = try await pair.inviter.startStream(named: "two", to: pair.advertiserPeer)
    try await second.write([9])
    let two = try #require(await incoming.next())
    second.cancel(reason: "changed my mind")
    do {
      for try await _ in two.chunks {}
      Issue.record("the stream ended cleanly")
    } catch let error as TransferError {
      #expect(error == .cancelledByPeer(reason: "changed my mind"))
    }
  }

  @Test("a small message overtakes a stream whose reader is stalled")
  func messageOvertakesStream() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let stream = try await pair.inviter.startStream(named: "big", to: pair.advertiserPeer)
    let writer = Task {
      try await stream.write([UInt8](repeating: 7, count: 8 << 20))
    }
    var incoming = pair.advertiser.incomingStreams.makeAsyncIterator()
    _ = try #require(await incoming.next())  // opened, never read: the stream is stalled
    try await Task.sleep(for: .milliseconds(300))
    let sentAt = ContinuousClock.now
    try await pair.inviter.send(Array("ping".utf8), to: [pair.advertiserPeer])
    var messages = pair.advertiser.messages.makeAsyncIterator()
    let message = try await messages.next()
    #expect(message?.data == Array("ping".utf8))
    print("message arrived \(seconds(.now - sentAt)) s after sending, stream stalled behind it")
    #expect(ContinuousClock.now - sentAt < .seconds(10), "held behind the stalled stream")
    writer.cancel()
  }

  @Test("a peer that disconnects mid-stream ends the reader with peerDisconnected")
  func disconnectMidStream() async throws {
    let pair = try await ConnectedPair.make()
    let stream = try await pair.inviter.startStream(named: "cut", to: pair.advertiserPeer)
    try await stream.write([1, 2, 3])
    var incoming = pair.advertiser.incomingStreams.makeAsyncIterator()
    let reader = try #require(await incoming.next())
    pair.inviter.disconnect()
    do {
      for try await _ in reader.chunks {}
      Issue.record("the stream ended cleanly")
    } catch let error as TransferError {
      guard case .peerDisconnected = error else {
        Issue.record("expected peerDisconnected, got \(error)")
        return
      }
    }
    pair.close()
  }
}
