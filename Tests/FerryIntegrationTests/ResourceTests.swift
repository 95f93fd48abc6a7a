import Ferry
import Foundation
import Testing

/// Resources (files and folders) between two sessions over real TLS, onto a real disk.
@Suite("Resources", .timeLimit(.minutes(3)), .endsItsProcesses)
struct ResourceTests {
  /// Collects a session's resource events.
  func events(_ session: Session) -> EventRecorder<ResourceEvent> {
    EventRecorder(session.resourceEvents)
  }

  @Test("a finished offer is let go of: sending many offers in one session does not grow memory")
  func finishedOffersFreed() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("freed-src")
    let destination = try temporaryDirectory("freed-dst")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    weak var released: TransferProgress?
    for round in 0..<3 {
      let file = source.appendingPathComponent("f\(round)")
      try writeFile(file, size: 1000 + round)
      let transfer = try pair.inviter.sendResource(
        at: file, named: "f\(round)", to: pair.advertiserPeer)
      #expect(try await transfer.result().map(\.status) == [.stored])
      released = transfer.progress
    }
    // The offer, its progress and its file list go with the last reference to the transfer
    // (its progress's cancellation handler once held the offer, and so itself, for ever).
    try await waitUntil { released == nil }
    #expect(released == nil)
  }

  @Test("a sender that asks for SHA-256 gets it end to end: both sides report sha256sum's digest")
  func sha256Checksum() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("src")
    let destination = try temporaryDirectory("dst")
    let file = source.appendingPathComponent("disk.img")
    try writeFile(file, size: 3 << 20 + 7)
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let received = events(pair.advertiser)
    let transfer = try pair.inviter.sendResource(
      at: file, named: "disk.img", to: pair.advertiserPeer, checksum: .sha256)
    let results = try await transfer.result()
    #expect(results.map(\.status) == [.stored])
    #expect(results.first?.checksum == .sha256)
    #expect(results.first?.digestHex == (try sha256(of: file)))
    let finished = try #require(
      await received.first {
        if case .finished = $0 { return true }
        return false
      })
    guard case .finished(_, _, .success(let url?), let digest?) = finished.record.element else {
      Issue.record("not stored: \(finished.record.element)")
      return
    }
    #expect(digest == FileDigest(.sha256, results.first?.digest ?? []))
    #expect(try sha256(of: url) == sha256(of: file))
  }

  /// A 64 MiB file holding 1 MiB of data at 8 MiB, 4 KiB at 40 MiB and nothing else: holes at
  /// its start, in its middle and at its end.
  func writeSparse(_ url: URL) throws {
    let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    #expect(fd >= 0)
    defer { close(fd) }
    #expect(ftruncate(fd, 64 << 20) == 0)
    for (offset, count) in [(8 << 20, 1 << 20), (40 << 20, 4096)] {
      let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ offset) }
      #expect(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, count, off_t(offset)) } == count)
    }
  }

  func allocated(_ url: URL) -> Int {
    var status = stat()
    return stat(url.path, &status) == 0 ? Int(status.st_blocks) * 512 : -1
  }

  @Test(
    "a sparse file stays sparse: its holes are not sent, the copy has holes, the digest is the file's",
    arguments: ChecksumAlgorithm.allCases)
  func sparseFile(checksum: ChecksumAlgorithm) async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("src")
    let destination = try temporaryDirectory("dst")
    let file = source.appendingPathComponent("disk.img")
    try writeSparse(file)
    try #require(allocated(file) < 4 << 20, "this filesystem keeps no holes")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let transfer = try pair.inviter.sendResource(
      at: file, named: "disk.img", to: pair.advertiserPeer, checksum: checksum)
    let results = try await transfer.result()
    #expect(results.map(\.status) == [.stored])
    // Only the data crossed: 1 MiB + 4 KiB, not 64 MiB.
    #expect(transfer.bytesSent == 1 << 20 + 4096)
    #expect(transfer.progress.overall.fractionCompleted == 1.0)
    let copy = destination.appendingPathComponent("disk.img")
    #expect(try sha256(of: copy) == sha256(of: file))
    #expect(try FileManager.default.attributesOfItem(atPath: copy.path)[.size] as? Int == 64 << 20)
    #expect(allocated(copy) < 4 << 20, "\(allocated(copy)) bytes allocated")
    let expected = checksum == .xxh3 ? try xxh3(of: file) : try sha256(of: file)
    #expect(results.first?.digestHex == expected)
  }

  @Test("a file arrives byte-identical, with its mode and mtime, and no staging is left")
  func singleFile() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("src")
    let destination = try temporaryDirectory("dst")
    let file = source.appendingPathComponent("photo.jpg")
    try writeFile(file, size: 20 << 20 + 123)
    chmod(file.path, 0o640)
    let mtime = Date(timeIntervalSince1970: 1_700_000_000.25)
    try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: file.path)
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let received = events(pair.advertiser)

    let transfer = try pair.inviter.sendResource(
      at: file, named: "photo.jpg", to: pair.advertiserPeer)
    let results = try await transfer.result()
    #expect(results.map(\.status) == [.stored])
    #expect(transfer.bytesSent == 20 << 20 + 123)
    #expect(transfer.progress.overall.fractionCompleted == 1.0)

    let finished = try #require(
      await received.first {
        if case .finished = $0 { return true }
        return false
      })
    guard
      case .finished(let name, let peer, .success(let url?), let digest?) = finished.record.element
    else {
      Issue.record("not stored: \(finished.record.element)")
      return
    }
    #expect(name == "photo.jpg")
    #expect(peer == pair.inviterPeer)
    #expect(url.path == destination.appendingPathComponent("photo.jpg").path)
    #expect(try sha256(of: url) == sha256(of: file))
    // XXH3-128 by default, as xxhsum computes it, at both ends.
    #expect(digest.checksum == .xxh3)
    #expect(digest.hex == (try xxh3(of: file)))
    #expect(results.first?.checksum == .xxh3)
    #expect(results.first?.digestHex == (try xxh3(of: file)))
    let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
    #expect((attributes[.posixPermissions] as? Int) == 0o640)
    let landed = try #require(attributes[.modificationDate] as? Date)
    #expect(abs(landed.timeIntervalSince1970 - mtime.timeIntervalSince1970) < 0.001)
    _ = await received.first {
      if case .offerFinished = $0 { return true }
      return false
    }
    #expect(
      !FileManager.default.fileExists(
        atPath: destination.appendingPathComponent(".ferry-partial").path))
  }

  @Test("a folder tree with empty, small and large files, sent as one offer")
  func folderTree() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("tree")
    let root = source.appendingPathComponent("project")
    try writeFile(root.appendingPathComponent("README"), size: 0)
    try writeFile(root.appendingPathComponent("src/main.swift"), size: 1234, seed: 2)
    try writeFile(root.appendingPathComponent("src/deep/er/data.bin"), size: 3 << 20, seed: 3)
    try writeFile(root.appendingPathComponent("naïve name with spaces.txt"), size: 77, seed: 4)
    for index in 0..<50 {
      try writeFile(
        root.appendingPathComponent("many/f\(index)"), size: index * 100, seed: UInt64(index))
    }
    let destination = try temporaryDirectory("tree-dst")
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let items = try ResourceItem.expanding([root])
    #expect(items.count == 54)
    let transfer = try pair.inviter.sendResources(items, to: pair.advertiserPeer)
    let results = try await transfer.result()
    #expect(results.count == 54)
    #expect(results.allSatisfy { $0.status == .stored })
    #expect(try tree(destination.appendingPathComponent("project")) == tree(root))
  }

  @Test(
    "empty folders are recreated (nested, with their mode); a file or a link in the way fails that entry only"
  )
  func emptyFolders() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("folders")
    let root = source.appendingPathComponent("album")
    let manager = FileManager.default
    try manager.createDirectory(
      at: root.appendingPathComponent("2025/raw/rejects"), withIntermediateDirectories: true)
    try manager.createDirectory(
      at: root.appendingPathComponent("private"), withIntermediateDirectories: true)
    chmod(root.appendingPathComponent("private").path, 0o700)
    try manager.createDirectory(
      at: root.appendingPathComponent("taken"), withIntermediateDirectories: true)
    try manager.createDirectory(
      at: root.appendingPathComponent("linked"), withIntermediateDirectories: true)
    try writeFile(root.appendingPathComponent("2025/cover.jpg"), size: 5000, seed: 1)
    let destination = try temporaryDirectory("folders-dst")
    let outside = try temporaryDirectory("folders-outside")
    // In the way: a file where a folder goes, and a link to a folder outside the destination.
    try writeFile(destination.appendingPathComponent("album/taken"), size: 3, seed: 2)
    symlink(outside.path, destination.appendingPathComponent("album/linked").path)
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    let items = try ResourceItem.expanding([root])
    #expect(
      items.filter(\.isFolder).map(\.path).sorted() == [
        "album/2025/raw/rejects", "album/linked", "album/private", "album/taken",
      ])
    // The entries in the way fail (the transfer reports the first); the others land.
    do {
      _ = try await pair.inviter.sendResources(items, to: pair.advertiserPeer).result()
      Issue.record("a folder in the way of a file or a link went unreported")
    } catch {
      #expect("\(error)".contains("album/linked") || "\(error)".contains("album/taken"), "\(error)")
    }
    #expect(
      try sha256(of: destination.appendingPathComponent("album/2025/cover.jpg"))
        == sha256(of: root.appendingPathComponent("2025/cover.jpg")))
    let placed = destination.appendingPathComponent("album")
    var isFolder: ObjCBool = false
    #expect(
      manager.fileExists(
        atPath: placed.appendingPathComponent("2025/raw/rejects").path, isDirectory: &isFolder)
        && isFolder.boolValue)
    let mode =
      try manager.attributesOfItem(atPath: placed.appendingPathComponent("private").path)[
        .posixPermissions] as? Int
    #expect(mode == 0o700)
    // Nothing was created through the link, and the file in the way is untouched.
    #expect(try manager.contentsOfDirectory(atPath: outside.path).isEmpty)
    #expect(try Data(contentsOf: placed.appendingPathComponent("taken")).count == 3)
  }

  @Test("the rename policy keeps both files: name (1).ext")
  func conflictRename() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("c-src")
    let destination = try temporaryDirectory("c-dst")
    let file = source.appendingPathComponent("report.pdf")
    try writeFile(file, size: 1000)
    try writeFile(destination.appendingPathComponent("report.pdf"), size: 10, seed: 9)
    pair.advertiser.receiveResources(ReceiveOptions(destination: destination))
    _ = try await pair.inviter.sendResource(at: file, named: "report.pdf", to: pair.advertiserPeer)
      .result()
    #expect(
      try sha256(of: destination.appendingPathComponent("report (1).pdf")) == sha256(of: file))
    #expect(try Data(contentsOf: destination.appendingPathComponent("report.pdf")).count == 10)
  }
}
