import Foundation
import Synchronization
import Testing

@testable import Ferry

/// The library's decision point: each offer, with its real files, is accepted or declined by the
/// application; free space is reserved across offers; files handed over unplaced are the
/// application's; the peer learns no local path.
@Suite("Deciding on offers", .timeLimit(.minutes(3)), .endsItsProcesses)
struct ResourceConsentTests {
  /// Collects what `session.resourceOffers` yields.
  final class Offers: Sendable {
    let received = Mutex<[ResourceOffer]>([])

    init(_ session: Session) {
      Task { [self] in
        for await offer in session.resourceOffers { self.received.withLock { $0.append(offer) } }
      }
    }

    /// Waits for the `count`th offer.
    func wait(for count: Int) async throws -> [ResourceOffer] {
      let deadline = ContinuousClock.now + Harness.patience
      while ContinuousClock.now < deadline {
        let now = received.withLock { $0 }
        if now.count >= count { return now }
        try await Task.sleep(for: .milliseconds(20))
      }
      throw TestFailure("only \(received.withLock { $0.count }) offer(s) arrived")
    }
  }

  @Test("an offer waits for the application: its real files are shown; decline stops the sender")
  func declined() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("asked")
    pair.advertiser.askAboutResourceOffers()
    let offers = Offers(pair.advertiser)
    let source = try temporaryDirectory("asked-src")
    try writeFile(source.appendingPathComponent("one.txt"), size: 100)
    try writeFile(source.appendingPathComponent("two.txt"), size: 200)
    let transfer = try pair.inviter.sendResources(
      try ResourceItem.expanding([source]), to: pair.advertiserPeer)
    let offer = try #require(try await offers.wait(for: 1).first)
    #expect(
      offer.files.map(\.path) == [
        "\(source.lastPathComponent)/one.txt", "\(source.lastPathComponent)/two.txt",
      ])
    #expect(offer.totalBytes == 300)
    #expect(offer.isPending)
    offer.decline(reason: "not today")
    #expect(!offer.isPending)
    await #expect(throws: TransferError.cancelledByPeer(reason: "not today")) {
      try await transfer.result()
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path).isEmpty)
  }

  @Test("accepting writes exactly the offered files")
  func accepted() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("accepted")
    pair.advertiser.askAboutResourceOffers()
    let offers = Offers(pair.advertiser)
    let file = try temporaryDirectory("accepted-src").appendingPathComponent("photo.jpg")
    try writeFile(file, size: 70_000)
    let transfer = try pair.inviter.sendResource(
      at: file, named: "photo.jpg", to: pair.advertiserPeer)
    try await offers.wait(for: 1)[0].accept(ReceiveOptions(destination: destination))
    _ = try await transfer.result()
    #expect(
      try sha256(of: destination.appendingPathComponent("photo.jpg")) == sha256(of: file))
  }

  @Test("an offer the application drops unanswered is declined, so the sender never hangs")
  func released() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    pair.advertiser.askAboutResourceOffers()
    let file = try temporaryDirectory("dropped-src").appendingPathComponent("x.bin")
    try writeFile(file, size: 10)
    let transfer = try pair.inviter.sendResource(at: file, named: "x.bin", to: pair.advertiserPeer)
    // Taken from the stream and let go.
    var iterator = pair.advertiser.resourceOffers.makeAsyncIterator()
    _ = await iterator.next()
    await #expect(throws: TransferError.self) { try await transfer.result() }
  }

  @Test("free space is reserved: two offers that fit alone but not together, the second refused")
  func reservations() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("reserved")
    let mounted = try await run(
      "/bin/mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", destination.path])
    try #require(mounted.status == 0, "\(mounted.stderr)")
    defer { Task { _ = try? await run("/bin/umount", ["-l", destination.path]) } }
    pair.advertiser.askAboutResourceOffers()
    let offers = Offers(pair.advertiser)
    let events = EventRecorder(pair.advertiser.resourceEvents)
    let source = try temporaryDirectory("reserved-src")
    try writeFile(source.appendingPathComponent("a.bin"), size: 5 << 20, seed: 1)
    try writeFile(source.appendingPathComponent("b.bin"), size: 5 << 20, seed: 2)
    let first = try pair.inviter.sendResource(
      at: source.appendingPathComponent("a.bin"), named: "a.bin", to: pair.advertiserPeer)
    let second = try pair.inviter.sendResource(
      at: source.appendingPathComponent("b.bin"), named: "b.bin", to: pair.advertiserPeer)
    let both = try await offers.wait(for: 2)
    let options = ReceiveOptions(destination: destination)
    for offer in both { offer.accept(options) }
    var results: [Bool] = []
    for transfer in [first, second] {
      do {
        _ = try await transfer.result()
        results.append(true)
      } catch {
        print("refused: \(error)")
        results.append(false)
      }
    }
    #expect(results.filter { $0 }.count == 1, "exactly one fits: \(results)")
    let refused = await events.first {
      if case .offerRefused(_, _, .resource(.insufficientSpace)) = $0 { return true }
      return false
    }
    #expect(refused != nil, "\(events.all.map(\.element))")
    #expect(SpaceReservations.shared.promised(on: deviceOf(destination)) == 0)
  }

  @Test("relocate: false hands files over as NAME.received, which stale cleanup leaves alone")
  func handedOver() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("handed")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination, relocate: false))
    let events = EventRecorder(pair.advertiser.resourceEvents)
    let file = try temporaryDirectory("handed-src").appendingPathComponent("old.txt")
    try writeFile(file, size: 1000)
    // Modified long ago: the staged file keeps that time.
    try FileManager.default.setAttributes(
      [.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)], ofItemAtPath: file.path)
    _ = try await pair.inviter.sendResource(at: file, named: "old.txt", to: pair.advertiserPeer)
      .result()
    let finished = await events.first {
      if case .finished(_, _, .success(_?), _) = $0 { return true }
      return false
    }
    guard case .finished(_, _, .success(let staged?), _)? = finished?.record.element else {
      Issue.record("no staged file reported")
      return
    }
    #expect(staged.lastPathComponent.hasSuffix(".received"))
    // A cleanup that removes everything older than a second leaves the handed-over file.
    try StagingArea(destination: destination).removeStale(olderThan: .seconds(1))
    #expect(try sha256(of: staged) == sha256(of: file))
    // The same file sent again, the first copy not moved yet: a second file, the first kept.
    let before = events.all.count
    _ = try await pair.inviter.sendResource(at: file, named: "old.txt", to: pair.advertiserPeer)
      .result()
    let again = await events.first(after: before) {
      if case .finished(_, _, .success(_?), _) = $0 { return true }
      return false
    }
    guard case .finished(_, _, .success(let second?), _)? = again?.record.element else {
      Issue.record("no second staged file reported")
      return
    }
    #expect(second != staged)
    #expect(second.lastPathComponent.hasSuffix(".received"))
    #expect(try sha256(of: staged) == sha256(of: file))
    #expect(try sha256(of: second) == sha256(of: file))
  }

  @Test("a receiver's failure reasons name the file as offered, never where the receiver keeps it")
  func reasonsWithoutPaths() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("RECEIVER-PATH")
    // A folder where the file's folder must go: placing fails.
    try Data("x".utf8).write(to: destination.appendingPathComponent("docs"))
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let file = try temporaryDirectory("why-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    do {
      _ = try await pair.inviter.sendResource(
        at: file, named: "docs/a.txt", to: pair.advertiserPeer
      )
      .result()
      Issue.record("placed under a file")
    } catch {
      #expect(!error.description.contains("RECEIVER-PATH"), "\(error)")
      #expect(error.description.contains("docs"), "\(error)")
    }
  }
}

/// The filesystem (`st_dev`) of `url`.
func deviceOf(_ url: URL) -> UInt64 {
  var status = stat()
  stat(url.path, &status)
  return UInt64(status.st_dev)
}
