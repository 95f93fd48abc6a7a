import Ferry
import Foundation
import Testing

/// The independent hostile peer (Tests/Hostile/hostile_peer.py) as a receiver, against a real
/// `ferry send`: what it says never reaches the terminal raw, its numbers never trap the
/// sender, its silence never makes the sender buffer without bound, and it learns no local path.
@Suite(
  "A hostile receiver against ferry send", .timeLimit(.minutes(3)), .serialized, .needsHostileRun,
  .endsItsProcesses)
struct HostileReceiverTests {
  /// A folder with a recognisable name, so that a leak of the sender's path shows.
  func source(_ size: Int = 300_000) throws -> URL {
    let file = try temporaryDirectory("private-SENDER-PATH").appendingPathComponent("report.pdf")
    try writeFile(file, size: size)
    return file
  }

  /// `ferry send --address 127.0.0.1:PORT --to FPR FILE`, run to its end.
  func send(_ file: URL, port: Int, fingerprint: String, json: Bool = false) async throws -> (
    status: Int32, stdout: String, stderr: String
  ) {
    try await run(
      Harness.ferryBinary,
      ["send", "--address", "127.0.0.1:\(port)", "--to", fingerprint, "--timeout", "20"]
        + (json ? ["--json"] : []) + [file.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()], timeout: .seconds(60))
  }

  @Test(
    "item 10: DECLINE, GOODBYE, RESET and FILE_ACK reasons full of terminal controls are escaped",
    arguments: [("decline", Int32(4)), ("goodbye", 1), ("refuse", 1), ("bad-ack", 1)])
  func reasons(mode: String, status: Int32) async throws {
    let (peer, port, fingerprint) = try await HostilePeer.serve(mode, ["--hold", "1"])
    defer { peer.signal(SIGKILL) }
    let result = try await send(try source(), port: port, fingerprint: fingerprint)
    #expect(result.status == status, "\(mode): \(result.stderr)")
    #expect(
      result.stderr.contains("\\u{1B}"), "\(mode): the reason was not shown: \(result.stderr)")
    #expect(!result.stderr.unicodeScalars.contains("\u{1B}"), "\(mode): a raw ESC was printed")
    #expect(rawControls(in: result.stderr).isEmpty, "\(mode): \(rawControls(in: result.stderr))")
    // In JSON every line stays one JSON object: control characters are JSON escapes; a
    // peer's reason field is exact, a message (made for people, often printed with jq -r)
    // shows them as visible escapes.
    let (again, againPort, againPrint) = try await HostilePeer.serve(mode, ["--hold", "1"])
    defer { again.signal(SIGKILL) }
    let json = try await send(try source(), port: againPort, fingerprint: againPrint, json: true)
    let lines = json.stdout.split(separator: "\n")
    let events = lines.compactMap { jsonObject(String($0)) }
    #expect(!lines.isEmpty && events.count == lines.count, "stdout is not NDJSON: \(json.stdout)")
    #expect(!json.stdout.unicodeScalars.contains("\u{1B}"))
    let told = events.compactMap { $0["reason"] as? String ?? $0["message"] as? String }
    #expect(
      told.contains { $0.contains("\u{1B}]0;pwned") || $0.contains("\\u{1B}]0;pwned") },
      "\(mode): \(json.stdout)")
  }

  @Test("faked progress (one more byte held each attempt) never keeps --retry-for going")
  func fakedProgress() async throws {
    let (peer, port, fingerprint) = try await HostilePeer.serve(
      "fake-progress", ["--connections", "200", "--seconds", "60"])
    defer { peer.signal(SIGKILL) }
    let started = ContinuousClock.now
    let result = try await run(
      Harness.ferryBinary,
      [
        "send", "--address", "127.0.0.1:\(port)", "--to", fingerprint, "--timeout", "10",
        "--retry-for", "10", "--json", try source(1 << 20).path,
      ],
      environment: ["FERRY_HOME": Harness.freshFerryHome()], timeout: .seconds(120))
    let took = ContinuousClock.now - started
    #expect(result.status != 0, "\(result.stderr)")
    let attempts = peer.stdoutLines.filter { $0.text.contains("\"attempt\"") }.count
    // 10 s without progress, waits of 1, 2, 4, 8 s: a handful of attempts, never one per byte.
    #expect(took < .seconds(45), "gave up after \(took): \(attempts) attempts")
    #expect((1...8).contains(attempts), "\(attempts) attempts: \(peer.stdout)")
  }

  @Test("item 2/6: a receiver answering with impossible offsets fails the send cleanly")
  func badAccept() async throws {
    let (peer, port, fingerprint) = try await HostilePeer.serve("bad-accept", ["--hold", "2"])
    defer { peer.signal(SIGKILL) }
    let result = try await send(try source(), port: port, fingerprint: fingerprint)
    #expect(result.status == 1, "\(result.stderr)")
    #expect(result.stderr.contains("answered the offer wrongly"), "\(result.stderr)")
  }

  @Test(
    "a receiver that accepts twice, acknowledges a file twice, early or as differing unasked breaks the protocol: the link closes",
    arguments: [
      ("accept", "accepted the offer twice"), ("ack", "acknowledged file 0 out of turn"),
      ("early", "acknowledged file 0 out of turn"),
      ("differs", "acknowledged file 0 out of turn"),
    ])
  func outOfTurn(variant: String, reason: String) async throws {
    let (peer, port, fingerprint) = try await HostilePeer.serve(
      "twice", ["--variant", variant, "--hold", "1"])
    defer { peer.signal(SIGKILL) }
    // Two files, so that the offer is still open when the second acknowledgement arrives.
    let folder = try temporaryDirectory("twice")
    try writeFile(folder.appendingPathComponent("a.txt"), size: 1000)
    try writeFile(folder.appendingPathComponent("b.txt"), size: 1000)
    let result = try await send(folder, port: port, fingerprint: fingerprint)
    #expect(result.status == 1, "\(variant): \(result.stderr)")
    #expect(result.stderr.contains(reason), "\(variant): \(result.stderr)")
    _ = await peer.waitForExit()
    #expect(peer.stdout.contains("\"goodbye\""), "\(variant): \(peer.stdout)")
    #expect(peer.stdout.contains(reason), "\(variant): \(peer.stdout)")
  }

  @Test("item 6: CREDIT that would overflow closes the link; the sender exits 1, no trap")
  func creditOverflow() async throws {
    let (peer, port, fingerprint) = try await HostilePeer.serve("credit-overflow", ["--hold", "1"])
    defer { peer.signal(SIGKILL) }
    let result = try await send(try source(3 << 20), port: port, fingerprint: fingerprint)
    #expect(result.status == 1, "\(result.stderr)")
    _ = await peer.waitForExit()
    #expect(peer.stdout.contains("credit beyond any window"), "\(peer.stdout)")
  }

  @Test("item 6: a receiver that grants a gigabyte of credit and reads nothing: sender memory flat")
  func silentReceiver() async throws {
    let (peer, port, fingerprint) = try await HostilePeer.serve("no-read", ["--hold", "8"])
    defer { peer.signal(SIGKILL) }
    // A sparse gigabyte: quick to read, much more than any buffer.
    let file = try temporaryDirectory("silent").appendingPathComponent("big.iso")
    _ = FileManager.default.createFile(atPath: file.path, contents: nil)
    let handle = try FileHandle(forWritingTo: file)
    try handle.truncate(atOffset: 1 << 30)
    try handle.close()
    // A stall would be retried (--retry-for): this test is about memory, not retries.
    let sender = try ChildProcess.ferry(
      [
        "send", "--address", "127.0.0.1:\(port)", "--to", fingerprint, "--retry-for", "0",
        file.path,
      ],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    defer { sender.signal(SIGKILL) }
    #expect(await peer.waitForLine { $0.contains("\"stalled\"") } != nil, "\(peer.stderr)")
    // Its peak over 5 s of the stall, read while it runs (a process that exited has none).
    var peak = 0
    let until = ContinuousClock.now + .seconds(5)
    while ContinuousClock.now < until, sender.isRunning {
      let status =
        (try? String(contentsOfFile: "/proc/\(sender.pid)/status", encoding: .utf8)) ?? ""
      let hwm =
        status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
        .flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
      peak = max(peak, hwm)
      try await Task.sleep(for: .milliseconds(100))
    }
    print("a silent receiver holding 1 GB of credit: ferry send peaked at \(peak / 1024) MiB")
    #expect(peak > 0 && peak < 150 << 10, "ferry send peaked at \(peak / 1024) MiB")
    peer.signal(SIGKILL)
    #expect(await sender.waitForExit() == 1, "\(sender.stderr)")
  }

  @Test("item 12: a file the sender cannot read is reported by its offered name, never its path")
  func privacy() async throws {
    let trigger = NSTemporaryDirectory() + "hostile-go-\(UUID().uuidString)"
    let (peer, port, fingerprint) = try await HostilePeer.serve(
      "capture-reset", ["--wait-for", trigger, "--hold", "1"])
    defer { peer.signal(SIGKILL) }
    let file = try source()
    let sender = try ChildProcess.ferry(
      ["send", "--address", "127.0.0.1:\(port)", "--to", fingerprint, file.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    defer { sender.signal(SIGKILL) }
    #expect(await peer.waitForLine { $0.contains("\"offer\"") } != nil, "\(peer.stderr)")
    try FileManager.default.removeItem(at: file)
    _ = FileManager.default.createFile(atPath: trigger, contents: nil)
    let reset = try #require(
      await peer.waitForLine { $0.contains("\"reset\"") }.flatMap {
        jsonObject($0.text)
      }, "\(peer.stdout) \(sender.stderr)")
    let reason = try #require(reset["reason"] as? String)
    #expect(reason.contains("report.pdf"), "\(reason)")
    #expect(!reason.contains("SENDER-PATH") && !reason.contains("/"), "leaked: \(reason)")
    #expect(await sender.waitForExit() == 1)
  }
}
