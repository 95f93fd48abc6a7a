import Foundation
import Testing

/// Re-sending what the receiver already has: nothing crosses the wire, nothing is duplicated,
/// both ends say "identical"; different content under the same size and time is still sent.
/// Runs without avahi-daemon (no system bus): receive listens, send uses --address.
@Suite(
  "ferry send again: identical files", .timeLimit(.minutes(3)),
  .enabled(
    if: Harness.keepsUserAttributes,
    "the temporary folder's filesystem keeps no user extended attributes"), .endsItsProcesses)
struct CLIResendTests {

  /// `ferry send --json --address 127.0.0.1:PORT FOLDER`, to its end: status and events.
  func send(_ folder: URL, port: Int, home: String, options: [String] = []) async throws -> (
    status: Int32, events: [[String: Any]], stderr: String
  ) {
    let result = try await run(
      Harness.ferryBinary,
      ["send", "--json", "--address", "127.0.0.1:\(port)"] + options + [folder.path],
      environment: TestEnvironment.withoutBus(home: home), timeout: .seconds(90))
    let events = result.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }
    return (result.status, events, result.stderr)
  }

  /// Names of every entry under `directory`, recursively.
  func names(_ directory: URL) -> [String] {
    (FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String]) ?? []
  }

  @Test(
    "--checksum sha256 is used at both ends (sha256sum's digests), empty folders too; again with xxh3: identical"
  )
  func checksumChoice() async throws {
    let destination = try temporaryDirectory("checksum-dst")
    let folder = try temporaryDirectory("checksum-src").appendingPathComponent("set")
    let names = ["a.bin", "sub/b.bin", "sub/c.bin"]
    for (index, name) in names.enumerated() {
      try writeFile(folder.appendingPathComponent(name), size: 3000 * index + 11, seed: 3)
    }
    // An empty folder travels too, with no digest.
    try FileManager.default.createDirectory(
      at: folder.appendingPathComponent("empty/inner"), withIntermediateDirectories: true)
    let receiverStarted = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", "sums"], bus: .none)
    let (receiver, port) = (receiverStarted.process, receiverStarted.port)
    defer { receiver.signal(SIGKILL) }
    let home = Harness.freshFerryHome()
    let sums = Dictionary(
      uniqueKeysWithValues: try names.map {
        ("set/" + $0, try sha256(of: folder.appendingPathComponent($0)))
      })
    let xxh3s = Dictionary(
      uniqueKeysWithValues: try names.map {
        ("set/" + $0, try xxh3(of: folder.appendingPathComponent($0)))
      })

    let first = try await send(folder, port: port, home: home, options: ["--checksum", "sha256"])
    #expect(first.status == 0, "\(first.stderr)")
    let done = first.events.filter { $0["event"] as? String == "file-done" }
    #expect(done.count == 4)
    let folderDone = done.first { $0["path"] as? String == "set/empty/inner" }
    #expect(folderDone?["status"] as? String == "stored", "\(done)")
    #expect(folderDone?["checksum"] is NSNull)
    var isFolder: ObjCBool = false
    #expect(
      FileManager.default.fileExists(
        atPath: destination.appendingPathComponent("set/empty/inner").path, isDirectory: &isFolder)
        && isFolder.boolValue)
    let sent = done.filter { $0["path"] as? String != "set/empty/inner" }
    #expect(sent.count == 3)
    for event in sent {
      let path = try #require(event["path"] as? String)
      #expect(event["checksum"] as? String == "sha256")
      #expect(event["digest"] as? String == sums[path], "\(event)")
      #expect(event["sha256"] as? String == sums[path], "\(event)")
    }
    let stored = await receiver.waitForLine { $0.contains("\"file-done\"") && $0.contains("c.bin") }
    let receivedEvent = try #require(stored.flatMap { jsonObject($0.text) })
    #expect(receivedEvent["checksum"] as? String == "sha256")
    #expect(receivedEvent["sha256"] as? String == sums["set/sub/c.bin"])

    // The default digest compares the held copies: nothing is sent again.
    let again = try await send(folder, port: port, home: home)
    #expect(again.status == 0, "\(again.stderr)")
    #expect(again.events.last?["identical"] as? Int == 3, "\(again.events)")
    for event in again.events.filter({
      $0["event"] as? String == "file-done" && $0["path"] as? String != "set/empty/inner"
    }) {
      let path = try #require(event["path"] as? String)
      #expect(event["checksum"] as? String == "xxh3-128")
      #expect(event["digest"] as? String == xxh3s[path], "\(event)")
      #expect(event["sha256"] is NSNull)
    }
    #expect(try tree(destination.appendingPathComponent("set")) == tree(folder))
  }

  @Test(
    "a completed 200-file send sent again: exit 0, no data, no '(1)' files, identical at both ends"
  )
  func resend() async throws {
    let destination = try temporaryDirectory("again-dst")
    let folder = try temporaryDirectory("again-src").appendingPathComponent("batch")
    for index in 0..<200 {
      try writeFile(
        folder.appendingPathComponent("d\(index % 7)/file\(index).dat"), size: 50 + index * 97,
        seed: UInt64(index))
    }
    let receiverStarted = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", "again"], bus: .none)
    let (receiver, port) = (receiverStarted.process, receiverStarted.port)
    defer { receiver.signal(SIGKILL) }
    let home = Harness.freshFerryHome()

    let first = try await send(folder, port: port, home: home)
    #expect(first.status == 0, "\(first.stderr)")
    #expect(first.events.last?["stored"] as? Int == 200)

    let again = try await send(folder, port: port, home: home)
    #expect(again.status == 0, "\(again.stderr)")
    let done = try #require(again.events.last)
    #expect(done["event"] as? String == "done")
    #expect(done["identical"] as? Int == 200, "\(done)")
    #expect(done["stored"] as? Int == 0)
    #expect(done["bytes_sent"] as? Int == 0, "no data crosses the wire: \(done)")
    let statuses = again.events.filter { $0["event"] as? String == "file-done" }
      .compactMap { $0["status"] as? String }
    #expect(statuses == Array(repeating: "identical", count: 200))
    #expect(again.stderr.contains("200 already there"), "\(again.stderr)")
    #expect(!names(destination).contains { $0.contains(" (1)") }, "\(names(destination))")
    #expect(try tree(destination.appendingPathComponent("batch")) == tree(folder))
    // Another sender with the same files learns nothing of them: it did not place them, so
    // they are not compared (it cannot probe what others sent), and its copies land beside.
    let stranger = try await send(folder, port: port, home: Harness.freshFerryHome())
    #expect(stranger.status == 0, "\(stranger.stderr)")
    #expect(stranger.events.last?["identical"] as? Int == 0, "\(stranger.events.last ?? [:])")
    #expect(stranger.events.last?["stored"] as? Int == 200)
    let identicalAtReceiver = await receiver.waitForLine(timeout: Harness.patience) { _ in
      receiver.stdoutLines.filter { $0.text.contains("\"status\":\"identical\"") }.count == 200
    }
    #expect(identicalAtReceiver != nil, "the receiver reports them identical too")

    // Other content under the same size and modification time: compared, found different,
    // sent whole — and, the name being taken, saved beside it (the conflict policy applies to
    // different content only).
    let changed = folder.appendingPathComponent("d3/file3.dat")
    var before = stat()
    #expect(stat(changed.path, &before) == 0)
    var bytes = try Data(contentsOf: changed)
    bytes[0] ^= 0xFF
    try bytes.write(to: changed)
    var times = [before.st_atim, before.st_mtim]
    #expect(utimensat(AT_FDCWD, changed.path, &times, 0) == 0)
    let third = try await send(folder, port: port, home: home)
    #expect(third.status == 0, "\(third.stderr)")
    #expect(third.events.last?["identical"] as? Int == 199, "\(third.events.last ?? [:])")
    #expect(third.events.last?["stored"] as? Int == 1)
    #expect(third.events.last?["bytes_sent"] as? Int == bytes.count)
    let beside = destination.appendingPathComponent("batch/d3/file3 (2).dat")
    #expect(try Data(contentsOf: beside) == bytes)

    // With --on-conflict skip at the receiver, different content is skipped, not sent.
    let skipping = try temporaryDirectory("again-skip-dst")
    // cp -a keeps the modification times to the nanosecond, as Ferry set them.
    let copy = try await run(
      "/bin/cp", ["-a", destination.appendingPathComponent("batch").path, skipping.path])
    #expect(copy.status == 0, "\(copy.stderr)")
    for name in ["file3 (1).dat", "file3 (2).dat"] {
      try FileManager.default.removeItem(
        at: skipping.appendingPathComponent("batch/d3/\(name)"))
    }
    let skipperStarted = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", skipping.path, "--name", "skipper", "--on-conflict", "skip"],
      bus: .none)
    let (skipper, skipPort) = (skipperStarted.process, skipperStarted.port)
    defer { skipper.signal(SIGKILL) }
    let fourth = try await send(folder, port: skipPort, home: home)
    #expect(fourth.status == 0, "\(fourth.stderr)")
    #expect(fourth.events.last?["identical"] as? Int == 199, "\(fourth.events.last ?? [:])")
    #expect(fourth.events.last?["bytes_sent"] as? Int == 0)
    let skipped = fourth.events.filter {
      $0["event"] as? String == "file-done" && $0["status"] as? String == "skipped"
    }
    #expect(skipped.compactMap { $0["path"] as? String } == ["batch/d3/file3.dat"])
  }

  @Test(
    "a file whose name was taken, sent twice: saved once as 'notes (1).txt', then identical there, not 'notes (2).txt'"
  )
  func resendAfterRename() async throws {
    let destination = try temporaryDirectory("renamed-dst")
    let theirs = Data("the receiver's own notes\n".utf8)
    try theirs.write(to: destination.appendingPathComponent("notes.txt"))
    let source = try temporaryDirectory("renamed-src")
    let notes = source.appendingPathComponent("notes.txt")
    try Data("the sender's notes, a different file\n".utf8).write(to: notes)
    let receiverStarted = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", "renamed"], bus: .none)
    let (receiver, port) = (receiverStarted.process, receiverStarted.port)
    defer { receiver.signal(SIGKILL) }
    let home = Harness.freshFerryHome()

    let first = try await send(notes, port: port, home: home)
    #expect(first.status == 0, "\(first.stderr)")
    #expect(first.events.last?["stored"] as? Int == 1)
    #expect(names(destination).sorted() == ["notes (1).txt", "notes.txt"])

    for attempt in 0..<2 {
      let again = try await send(notes, port: port, home: home)
      #expect(again.status == 0, "\(again.stderr)")
      let done = try #require(again.events.last)
      #expect(done["identical"] as? Int == 1, "attempt \(attempt): \(done)")
      #expect(done["stored"] as? Int == 0)
      #expect(done["bytes_sent"] as? Int == 0)
      #expect(names(destination).sorted() == ["notes (1).txt", "notes.txt"], "attempt \(attempt)")
    }
    // The receiver writes its file-done as the sender ends, maybe after: wait for both
    // attempts' before reading the last.
    func identical() -> [Observation] {
      receiver.events("file-done").filter { $0["status"] as? String == "identical" }
    }
    try await waitUntil { identical().count >= 2 }
    let saved = identical().last
    #expect(
      (saved?["saved"] as? String)?.hasSuffix("/notes (1).txt") == true, "\(receiver.stdout)")
    #expect(try Data(contentsOf: destination.appendingPathComponent("notes.txt")) == theirs)

    // Changed content under the same name: a new copy beside both, as the policy says.
    try Data("the sender's notes, edited\n".utf8).write(to: notes)
    let edited = try await send(notes, port: port, home: home)
    #expect(edited.status == 0, "\(edited.stderr)")
    #expect(edited.events.last?["stored"] as? Int == 1, "\(edited.events.last ?? [:])")
    #expect(names(destination).sorted() == ["notes (1).txt", "notes (2).txt", "notes.txt"])

    // No oracle: this sender's own file offered as "probe (1).txt" is not taken for a renamed
    // copy of "probe.txt" — else offering it as "probe.txt" next would say identical exactly
    // when something else holds that name.
    try Data("someone else's\n".utf8).write(to: destination.appendingPathComponent("probe.txt"))
    let bait = try temporaryDirectory("renamed-bait")
    let numbered = bait.appendingPathComponent("probe (1).txt")
    let plain = try temporaryDirectory("renamed-plain").appendingPathComponent("probe.txt")
    for url in [numbered, plain] {
      try Data("the probe\n".utf8).write(to: url)
      var times = [
        timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0),
      ]
      #expect(utimensat(AT_FDCWD, url.path, &times, 0) == 0)
    }
    let baited = try await send(numbered, port: port, home: home)
    #expect(baited.events.last?["stored"] as? Int == 1, "\(baited.events.last ?? [:])")
    let probed = try await send(plain, port: port, home: home)
    #expect(
      probed.events.last?["identical"] as? Int == 0, "an oracle: \(probed.events.last ?? [:])")
    #expect(probed.events.last?["stored"] as? Int == 1)
    for name in ["probe.txt", "probe (1).txt", "probe (2).txt", "notes.txt"] {
      try? FileManager.default.removeItem(at: destination.appendingPathComponent(name))
    }

    // Another sender's same file is not compared with this sender's copies: a copy of its own.
    try Data("the sender's notes, a different file\n".utf8).write(to: notes)
    let stranger = try await send(notes, port: port, home: Harness.freshFerryHome())
    #expect(stranger.events.last?["identical"] as? Int == 0, "\(stranger.events.last ?? [:])")
    #expect(names(destination).count == 3, "\(names(destination))")
  }
}
