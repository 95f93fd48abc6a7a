import Foundation
import Synchronization
import Testing

@testable import Ferry

/// Transfers that are interrupted, and resumed; data that must not wait behind files.
@Suite("Resume and priority", .timeLimit(.minutes(3)), .endsItsProcesses)
struct ResumeTests {
  /// The file the killed sender was sending.
  static let movieSize = 192 << 20

  @Test(
    "sender killed mid-file: the receiver reports it, keeps the staged bytes; re-sending resumes",
    arguments: [0, 60])
  func resumeAfterKill(smallFiles: Int) async throws {
    let identity = Identity.generate()
    let listener = InvitationListener(
      identity: identity, displayName: "keeper", timeouts: .init(), knownPeers: nil,
      maximumPending: 8)
    let port = try await listener.start(port: 0)
    defer { listener.stop() }
    let session = try Session(identity: identity, displayName: "keeper")
    defer { session.close() }
    let destination = try temporaryDirectory("resume")
    session.receiveResources(ReceiveOptions(destination: destination))
    let events = EventRecorder(session.resourceEvents)
    Task {
      for await invitation in listener.invitations { try await invitation.accept(into: session) }
    }
    let source = try temporaryDirectory("resume-src")
    let file = source.appendingPathComponent("movie.bin")
    let generated = try await run(
      "/bin/sh", ["-c", "head -c \(Self.movieSize) /dev/urandom > '\(file.path)'"])
    try #require(generated.status == 0)
    // With a folder beside it, the offer has more than 16 files: the receiver then lists its
    // staging folder once instead of asking after each file (that listing once found nothing,
    // and the movie started over).
    var total = Self.movieSize
    var paths = [file.path]
    if smallFiles > 0 {
      let tree = source.appendingPathComponent("tree")
      for index in 0..<smallFiles {
        try writeFile(
          tree.appendingPathComponent("part \(index / 10)/f\(index)"), size: 100 * index,
          seed: UInt64(index))
        total += 100 * index
      }
      paths.append(tree.path)
    }
    let home = Harness.freshFerryHome()
    let arguments = ["send", "127.0.0.1", "\(port)", identity.fingerprint.hexString] + paths

    // First attempt: the sender SIGKILLs itself once 4 MiB are across (a kill sent from here
    // could land after the whole file crossed loopback on a loaded machine).
    let first = try ChildProcess(
      Harness.testPeerBinary, arguments,
      environment: ["FERRY_HOME": home, "FERRY_TEST_DIE_AFTER_BYTES": "\(4 << 20)"])
    let died = await first.waitForExit(timeout: .seconds(60))
    try #require(died == 128 + SIGKILL, "not killed mid-file: \(first.stdout) \(first.stderr)")
    let ended = await events.first {
      if case .offerFinished(_, let error) = $0 { return error != nil }
      return false
    }
    guard case .offerFinished(_, .peerDisconnected?)? = ended?.record.element else {
      Issue.record("the receiver did not report the lost sender: \(events.all.map(\.element))")
      return
    }
    #expect(
      !FileManager.default.fileExists(atPath: destination.appendingPathComponent("movie.bin").path))
    let staged = try FileManager.default.contentsOfDirectory(
      atPath: destination.appendingPathComponent(".ferry-partial").path
    ).filter { $0.hasSuffix(".part") }
    try #require(staged.count == 1, "\(staged)")
    let stagedBytes = try #require(
      FileManager.default.attributesOfItem(
        atPath: destination.appendingPathComponent(".ferry-partial/\(staged[0])").path
      )[.size] as? Int)

    // Second attempt, same sender identity: resumes.
    let second = try ChildProcess(
      Harness.testPeerBinary, arguments, environment: ["FERRY_HOME": home])
    // A transfer, not only a start: twice the patience.
    let done = await second.waitForLine(timeout: Harness.patience * 2) {
      ["sent", "error"].contains(jsonObject($0)?["event"] as? String ?? "")
    }
    let summary = try #require(
      done.flatMap { jsonObject($0.text) }, "\(second.stdout)\(second.stderr)")
    let sentAgain = try #require(summary["bytes_sent"] as? Int)
    print(
      "resumed: the second attempt sent \(sentAgain) of \(total) bytes (\(stagedBytes) staged)")
    // Exactly what was not staged: the staged bytes are not sent again.
    #expect(sentAgain <= total - stagedBytes, "\(stagedBytes) bytes were staged")
    #expect(sentAgain > 0)
    #expect(try sha256(of: destination.appendingPathComponent("movie.bin")) == sha256(of: file))
    if smallFiles > 0 {
      let tree = source.appendingPathComponent("tree/part 5/f59")
      #expect(
        try sha256(of: destination.appendingPathComponent("tree/part 5/f59")) == sha256(of: tree))
    }
    second.signal(SIGKILL)
  }

  @Test("a small message sent while a large resource is in flight arrives long before it finishes")
  func messageDuringResource() async throws {
    let pair = try await ConnectedPair.make()
    defer { pair.close() }
    let source = try temporaryDirectory("large")
    let big = source.appendingPathComponent("large.bin")
    let made = try await run("/bin/sh", ["-c", "head -c \(256 << 20) /dev/zero > '\(big.path)'"])
    try #require(made.status == 0)
    pair.advertiser.receiveResources(
      ReceiveOptions(destination: try temporaryDirectory("large-dst")))
    let transfer = try pair.inviter.sendResource(
      at: big, named: "large.bin", to: pair.advertiserPeer)
    for await snapshot in transfer.progress.snapshots where snapshot.bytes > 8 << 20 { break }
    let sentAt = transfer.bytesSent
    try await pair.inviter.send(Array("still there?".utf8), to: [pair.advertiserPeer])
    var messages = pair.advertiser.messages.makeAsyncIterator()
    let message = try await messages.next()
    let passed = transfer.bytesSent - sentAt
    #expect(message?.data == Array("still there?".utf8))
    _ = try await transfer.result()
    print("\(passed >> 20) MiB of the 256 MiB resource were sent while the message was on its way")
    // Counted in bytes, not seconds: ahead of the resource, the message waits only for what is
    // already in the link's buffers and the resource's 8 MiB window (about 20 MiB in all).
    // Queued behind the resource, it would wait for the 248 MiB left. The bound, half the file,
    // leaves the rest for a loaded machine that wakes this task late while the transfer goes on.
    #expect(passed < 128 << 20)
  }
}
