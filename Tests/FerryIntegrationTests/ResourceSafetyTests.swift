import Crypto
import FerryWire
import Foundation
import Testing

@testable import Ferry

/// Hostile offers, corruption, cancellation, resume, and full disks.
@Suite("Resource safety", .timeLimit(.minutes(3)), .endsItsProcesses)
struct ResourceSafetyTests {
  /// Writes a raw frame from `session` to `peer`, as a hostile peer speaking the protocol would.
  func raw(_ frame: Frame, from session: Session, to peer: PeerID) throws {
    let link = try session.link(to: peer)
    link.onMultiplexer { $0.answerOffer(frame) }
  }

  /// The error of the first `.offerRefused` event.
  func firstRefusal(
    _ events: EventRecorder<ResourceEvent>, timeout: Duration = Harness.patience
  ) async -> Result<URL?, TransferError>? {
    guard
      let found = await events.first(
        timeout: timeout,
        where: {
          if case .offerRefused = $0 { return true }
          return false
        }), case .offerRefused(_, _, let error) = found.record.element
    else { return nil }
    return .failure(error)
  }

  /// The first `.finished` event's result.
  func firstFinished(
    _ events: EventRecorder<ResourceEvent>, timeout: Duration = Harness.patience
  ) async -> Result<URL?, TransferError>? {
    guard
      let found = await events.first(
        timeout: timeout,
        where: {
          if case .finished = $0 { return true }
          return false
        }), case .finished(_, _, let result, _) = found.record.element
    else { return nil }
    return result
  }

  @Test(
    "hostile paths are refused before anything is written",
    arguments: [
      "../escape", "/etc/x", "a/../../b", "a/./b", "a//b", "dir/", "nul\u{0}byte", "new\nline",
      String(repeating: "x", count: 300), "ok/" + String(repeating: "y", count: 256),
      ".ferry-partial/planted", ".ferry-partial",
    ])
  func hostilePaths(path: String) async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let outside = try temporaryDirectory("outside")
    let destination = outside.appendingPathComponent("dest")
    try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let events = EventRecorder(pair.advertiser.resourceEvents)
    let source = try temporaryDirectory("evil-src")
    try writeFile(source.appendingPathComponent("payload"), size: 5)

    let items = [ResourceItem(url: source.appendingPathComponent("payload"), path: path)]
    // A sender using the API refuses it itself, before any frame…
    do {
      _ = try pair.inviter.sendResources(items, to: pair.advertiserPeer)
      Issue.record("\(path.debugDescription) was offered")
    } catch {
      guard case .resource(.unsafePath) = error else {
        Issue.record("expected unsafePath at the sender, got \(error)")
        return
      }
    }
    // …and the receiver refuses it from a sender that skips the check.
    let transfer = try pair.inviter.offer(items, to: pair.advertiserPeer)
    do {
      _ = try await transfer.result()
      Issue.record("\(path.debugDescription) was accepted")
    } catch {
      guard case .cancelledByPeer(let reason) = error else {
        Issue.record("expected a refusal, got \(error)")
        return
      }
      #expect(reason.contains("unsafe path"), "\(reason)")
    }
    guard case .failure(.resource(.unsafePath))? = await firstRefusal(events) else {
      Issue.record("no unsafe-path event")
      return
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["dest"])
    #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path).isEmpty)
  }

  @Test("a symlink already in the destination is never written through")
  func symlinkInDestination() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let outside = try temporaryDirectory("target")
    let destination = try temporaryDirectory("linked")
    try FileManager.default.createSymbolicLink(
      atPath: destination.appendingPathComponent("docs").path, withDestinationPath: outside.path)
    try FileManager.default.createSymbolicLink(
      atPath: destination.appendingPathComponent("note.txt").path,
      withDestinationPath: outside.appendingPathComponent("note.txt").path)
    pair.advertiser.receiveResources(
      ReceiveOptions(destination: destination, conflictPolicy: .overwrite))
    let source = try temporaryDirectory("src")
    try writeFile(source.appendingPathComponent("a"), size: 100)
    let transfer = try pair.inviter.sendResources(
      [
        ResourceItem(url: source.appendingPathComponent("a"), path: "docs/secret.txt"),
        ResourceItem(url: source.appendingPathComponent("a"), path: "note.txt"),
      ], to: pair.advertiserPeer)
    let results = try? await transfer.result()
    _ = results
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    // The link named note.txt was replaced by the file itself (rename replaces the link, never
    // writing through it); docs/secret.txt failed.
    let attributes = try FileManager.default.attributesOfItem(
      atPath: destination.appendingPathComponent("note.txt").path)
    #expect(attributes[.type] as? FileAttributeType == .typeRegular)
  }

  @Test("a corrupted chunk fails the integrity check; nothing lands in the destination")
  func corruptedChunk() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("corrupt")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let events = EventRecorder(pair.advertiser.resourceEvents)
    let channel: UInt32 = 1001  // odd: the inviter's
    let file = OfferedFile(
      path: "x.txt", size: 4, modificationSeconds: 0, modificationNanoseconds: 0, mode: 0o644)
    try raw(
      ResourceMessage.offer(channel: channel, files: [file]).frame, from: pair.inviter,
      to: pair.advertiserPeer)
    try raw(
      ResourceMessage.chunk(channel: channel, file: 0, bytes: Array("abcd".utf8)).frame,
      from: pair.inviter, to: pair.advertiserPeer)
    let claimed = Array(SHA256.hash(data: Array("abce".utf8)))
    try raw(
      ResourceMessage.fileEnd(channel: channel, file: 0, digest: claimed).frame, from: pair.inviter,
      to: pair.advertiserPeer)
    guard case .failure(.resource(.integrityCheckFailed(let path)))? = await firstFinished(events)
    else {
      Issue.record("no integrity failure: \(events.all.map(\.element))")
      return
    }
    #expect(path == "x.txt")
    #expect(
      !FileManager.default.fileExists(atPath: destination.appendingPathComponent("x.txt").path))
    let staged =
      (try? FileManager.default.contentsOfDirectory(
        atPath: destination.appendingPathComponent(".ferry-partial").path)) ?? []
    #expect(staged.filter { $0.hasSuffix(".part") }.isEmpty)
  }

  @Test(
    "a HOLE past the offered size, or data for an empty folder, ends the offer; nothing lands",
    arguments: [
      "hole past the end", "hole for a folder", "chunk for a folder", "other digest length",
    ])
  func hostileHolesAndFolders(attack: String) async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("holes")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let events = EventRecorder(pair.advertiser.resourceEvents)
    let channel: UInt32 = 1001  // odd: the inviter's
    let folderEntry = attack.hasSuffix("folder") || attack.hasPrefix("other")
    let entry = OfferedFile(
      path: "x", size: folderEntry ? 0 : 10, modificationSeconds: 0, modificationNanoseconds: 0,
      mode: folderEntry ? OfferedFile.folderBit | 0o755 : 0o644)
    try raw(
      ResourceMessage.offer(channel: channel, files: [entry], digest: .xxh3).frame,
      from: pair.inviter, to: pair.advertiserPeer)
    let frame: Frame
    switch attack {
    case "hole past the end", "hole for a folder":
      frame = ResourceMessage.hole(channel: channel, file: 0, length: 11).frame
    case "chunk for a folder":
      frame = ResourceMessage.chunk(channel: channel, file: 0, bytes: [1, 2, 3]).frame
    default:  // a folder's FILE_END with SHA-256's length in an XXH3 offer
      frame =
        ResourceMessage.fileEnd(channel: channel, file: 0, digest: Array(repeating: 0, count: 32))
        .frame
    }
    try raw(frame, from: pair.inviter, to: pair.advertiserPeer)
    guard case .failure? = await firstFinished(events) else {
      Issue.record("\(attack): no failure: \(events.all.map(\.element))")
      return
    }
    #expect(
      !FileManager.default.fileExists(atPath: destination.appendingPathComponent("x").path),
      "\(attack)")
  }

  @Test("cancelling from the sender or the receiver: both see it, nothing lands")
  func cancellation() async throws {
    for side in ["sender", "receiver"] {
      let pair = try await ConnectedPair.make()
      defer { pair.close() }
      let source = try temporaryDirectory("big")
      let big = source.appendingPathComponent("big.bin")
      try writeAllocated(big, size: Int(2 << 30))  // 2 GiB, far longer than the test
      let destination = try temporaryDirectory("cancel-\(side)")
      pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
      let events = EventRecorder(pair.advertiser.resourceEvents)
      let transfer = try pair.inviter.sendResource(
        at: big, named: "big.bin", to: pair.advertiserPeer)
      let offer = try #require(
        await events.first {
          if case .offerReceived = $0 { return true }
          return false
        })
      // Bytes are moving once the file is opened at its first ones.
      let started = await events.first {
        if case .started = $0 { return true }
        return false
      }
      #expect(started != nil)
      if side == "sender" {
        transfer.progress.overall.cancel()
      } else if case .offerReceived(let incoming) = offer.record.element {
        incoming.cancel()
      }
      do {
        _ = try await transfer.result()
        Issue.record("\(side): the transfer completed")
      } catch {
        #expect(
          error
            == (side == "sender"
              ? .cancelled : .cancelledByPeer(reason: "the receiver cancelled the transfer")))
      }
      let ended = await events.first {
        if case .offerFinished = $0 { return true }
        return false
      }
      guard case .offerFinished(_, let error)? = ended?.record.element else {
        Issue.record("\(side): receiver never finished")
        return
      }
      if side == "sender" {
        #expect(error == .cancelledByPeer(reason: "the sender cancelled the transfer"))
      } else {
        #expect(error == .cancelled)
      }
      #expect(
        !FileManager.default.fileExists(atPath: destination.appendingPathComponent("big.bin").path))
    }
  }

  @Test("an offer larger than the free space is declined before anything is written")
  func insufficientSpace() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("small")
    let mounted = try await run(
      "/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", destination.path])
    try #require(mounted.status == 0, "\(mounted.stderr)")
    defer { Task { _ = try? await run("/bin/umount", ["-l", destination.path]) } }
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let source = try temporaryDirectory("src")
    try writeFile(source.appendingPathComponent("big"), size: 6 << 20)
    do {
      _ = try await pair.inviter.sendResource(
        at: source.appendingPathComponent("big"), named: "big", to: pair.advertiserPeer
      ).result()
      Issue.record("accepted an offer that cannot fit")
    } catch {
      guard case .cancelledByPeer(let reason) = error else {
        Issue.record("expected a refusal, got \(error)")
        return
      }
      #expect(reason.contains("not enough space"))
    }
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: destination.path).filter {
        $0 != ".ferry-partial"
      }.isEmpty)
  }

  @Test("a disk that fills up mid-file fails with a clear error and leaves nothing in DEST")
  func diskFillsUp() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let destination = try temporaryDirectory("filling")
    let mounted = try await run(
      "/bin/mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", destination.path])
    try #require(mounted.status == 0, "\(mounted.stderr)")
    defer { Task { _ = try? await run("/bin/umount", ["-l", destination.path]) } }
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let events = EventRecorder(pair.advertiser.resourceEvents)
    let source = try temporaryDirectory("src")
    let file = source.appendingPathComponent("video.bin")
    // 48 MiB of 64: it takes a while to arrive, so the filler is there first on a loaded
    // machine too; 48 + 40 MiB do not fit.
    try writeAllocated(file, size: Int(48 << 20))
    // Another program fills the disk right after the offer was accepted.
    let filler = Task {
      _ = await events.first {
        if case .offerReceived = $0 { return true }
        return false
      }
      try? Data(count: 40 << 20).write(to: destination.appendingPathComponent("other-program.dat"))
    }
    do {
      _ = try await pair.inviter.sendResource(at: file, named: "video.bin", to: pair.advertiserPeer)
        .result()
      Issue.record("the file fit")
    } catch {
      print("sender saw: \(error)")
    }
    await filler.value
    let finished = await events.first {
      if case .finished(_, _, .failure, _) = $0 { return true }
      return false
    }
    guard case .finished(_, _, .failure(let error), _)? = finished?.record.element else {
      Issue.record("no failure reported: \(events.all.map(\.element))")
      return
    }
    #expect(error.description.contains("No space left"), "\(error)")
    #expect(
      !FileManager.default.fileExists(atPath: destination.appendingPathComponent("video.bin").path))
  }

  @Test("a file changed after it was offered is not sent as a mix of old and new; it is named")
  func changedAfterOffer() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("changing")
    let destination = try temporaryDirectory("changing-dst")
    let first = source.appendingPathComponent("big.bin")
    let second = source.appendingPathComponent("log.txt")
    try writeFile(first, size: 64 << 20)
    try writeFile(second, size: 1000, seed: 2)
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let transfer = try pair.inviter.sendResources(
      [ResourceItem(url: first, path: "big.bin"), ResourceItem(url: second, path: "log.txt")],
      to: pair.advertiserPeer)
    // Grows while big.bin is on its way (as a log being written would).
    let handle = try FileHandle(forWritingTo: second)
    try handle.seekToEnd()
    try handle.write(contentsOf: Data("one more line\n".utf8))
    try handle.close()
    await #expect(
      throws: TransferError.resource(
        .cannotRead("\(second.path) changed after it was offered; send it again"))
    ) {
      try await transfer.result()
    }
    #expect(
      !FileManager.default.fileExists(atPath: destination.appendingPathComponent("log.txt").path))
  }

  @Test("progress totals equal file sizes and each file completes exactly once")
  func progressAccounting() async throws {
    let progress = TransferProgress(files: [("a", 3 << 20), ("empty", 0)])
    #expect(progress.file(0).totalUnitCount == 3 << 20)
    #expect(progress.overall.totalUnitCount == (3 << 20) + 1)
    for step in stride(from: 0, through: 3 << 20, by: 256 << 10) {
      progress.advance(0, to: UInt64(step))
      #expect(progress.file(0).fractionCompleted < 1.0)
    }
    progress.complete(0)
    #expect(progress.file(0).fractionCompleted == 1.0)
    progress.complete(0)
    progress.complete(1)
    #expect(progress.overall.fractionCompleted == 1.0)
    #expect(progress.file(0).completedUnitCount == 3 << 20)
  }

  @Test(
    "skip never tells a sender which names are taken; only its own files are skipped"
  )
  func skipDoesNotProbe() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("probe-src")
    let destination = try temporaryDirectory("probe-dst")
    // Put there by someone else: a file at an offered name, a file where a folder goes.
    try writeFile(destination.appendingPathComponent("taken.txt"), size: 10, seed: 9)
    try writeFile(destination.appendingPathComponent("blocker"), size: 3, seed: 8)
    for name in ["taken.txt", "free.txt", "probe.txt"] {
      try writeFile(source.appendingPathComponent(name), size: 1000, seed: 1)
    }
    pair.advertiser.receiveResources(
      ReceiveOptions(destination: destination, conflictPolicy: .skip))
    let results = try await pair.inviter.sendResources(
      [
        ResourceItem(url: source.appendingPathComponent("taken.txt"), path: "taken.txt"),
        ResourceItem(url: source.appendingPathComponent("free.txt"), path: "free.txt"),
        ResourceItem(url: source.appendingPathComponent("probe.txt"), path: "blocker/probe.txt"),
      ], to: pair.advertiserPeer
    ).result()
    // The same answer whatever the destination holds.
    #expect(results.map(\.status) == [.stored, .stored, .stored], "\(results)")
    #expect(results.allSatisfy { $0.reason.isEmpty })
    // Nothing of theirs was touched; the free name was stored.
    #expect(try Data(contentsOf: destination.appendingPathComponent("taken.txt")).count == 10)
    #expect(try Data(contentsOf: destination.appendingPathComponent("blocker")).count == 3)
    #expect(
      try sha256(of: destination.appendingPathComponent("free.txt"))
        == sha256(of: source.appendingPathComponent("free.txt")))

    // A file this sender placed itself (changed since) is what it may hear of: skipped —
    // where the filesystem keeps the sender in an extended attribute; elsewhere no file is
    // known to be its own.
    try writeFile(source.appendingPathComponent("free.txt"), size: 2000, seed: 3)
    let again = try await pair.inviter.sendResources(
      [ResourceItem(url: source.appendingPathComponent("free.txt"), path: "free.txt")],
      to: pair.advertiserPeer
    ).result()
    let expected: FileStatus = Harness.keepsUserAttributes ? .skipped : .stored
    #expect(again.map(\.status) == [expected], "\(again)")
    #expect(try Data(contentsOf: destination.appendingPathComponent("free.txt")).count == 1000)
  }

  @Test("a failure in the destination is told to the sender without naming what is there")
  func failureReasonsNameNothing() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("reason-src")
    let destination = try temporaryDirectory("reason-dst")
    try writeFile(destination.appendingPathComponent("blocker"), size: 3, seed: 8)
    try writeFile(source.appendingPathComponent("probe.txt"), size: 100)
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    do {
      _ = try await pair.inviter.sendResource(
        at: source.appendingPathComponent("probe.txt"), named: "blocker/probe.txt",
        to: pair.advertiserPeer
      ).result()
      Issue.record("a file under a file was stored")
    } catch {
      let text = "\(error)"
      #expect(text.contains(IncomingOfferStateMachine.notStored), "\(text)")
      #expect(!text.contains("symbolic link") && !text.contains("not a directory"), "\(text)")
    }
    #expect(try Data(contentsOf: destination.appendingPathComponent("blocker")).count == 3)
  }
}
