import Foundation
import Testing

/// `ferry send --retry-for`: a receiver that goes away mid-transfer and comes back is found
/// again and the transfer resumes; what must not be retried is not. Loopback, --address, no
/// avahi-daemon (no system bus).
@Suite("ferry send retries a dropped link", .timeLimit(.minutes(3)), .endsItsProcesses)
struct CLIRetryTests {

  /// `ferry receive --yes --json` on `port` (0: any) into `destination`, as identity `home`.
  func receiver(port: Int, destination: URL, home: String, options: [String] = []) async throws
    -> (ChildProcess, Int)
  {
    let receiver = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", "sink", "--port", "\(port)"]
        + options,
      bus: .none, home: home)
    return (receiver.process, receiver.port)
  }

  @Test("the receiver killed mid-transfer and restarted 3 s later: send resumes by itself, exit 0")
  func receiverRestarts() async throws {
    let destination = try temporaryDirectory("retry-dst")
    let big = try temporaryDirectory("retry-src").appendingPathComponent("big.iso")
    let size = 1 << 30
    try writeAllocated(big, size: size)
    let home = Harness.freshFerryHome()
    var (receiver, port) = try await receiver(port: 0, destination: destination, home: home)
    defer { receiver.signal(SIGKILL) }
    let sender = try ChildProcess.ferry(
      ["send", "--json", "--address", "127.0.0.1:\(port)", "--retry-for", "60", big.path],
      environment: TestEnvironment.withoutBus())
    defer { sender.signal(SIGKILL) }
    let moving = await receiver.waitForLine(timeout: Harness.patience) {
      $0.contains("\"progress\"") && (jsonObject($0)?["bytes"] as? Int ?? 0) > 0
    }
    try #require(moving != nil, "no progress: \(receiver.stderr) \(sender.stderr)")
    receiver.signal(SIGKILL)
    _ = await receiver.waitForExit()
    let retrying = await sender.waitForLine(timeout: Harness.patience) {
      $0.contains("\"retrying\"")
    }
    #expect(retrying != nil, "\(sender.stderr)")
    try await Task.sleep(for: .seconds(3))
    (receiver, _) = try await self.receiver(port: port, destination: destination, home: home)

    // A gigabyte on a loaded machine takes what it takes; the sender reports progress meanwhile.
    #expect(await sender.waitForExit(quietFor: Harness.patience) == 0, "\(sender.stderr)")
    let events = sender.stdoutLines.compactMap { jsonObject($0.text) }
    #expect(events.contains { $0["event"] as? String == "resumed" }, "\(sender.stdout)")
    let done = try #require(events.last { $0["event"] as? String == "done" })
    #expect(done["stored"] as? Int == 1, "\(done)")
    let sent = try #require(done["bytes_sent"] as? Int)
    #expect(sent <= size * 13 / 10, "\(sent) bytes sent for \(size): resumed, not restarted")
    let received = destination.appendingPathComponent("big.iso")
    #expect(try sha256(of: received) == sha256(of: big))
  }

  @Test("a receiver that declines is not retried: exit 4 at once")
  func declineNotRetried() async throws {
    let destination = try temporaryDirectory("retry-decline-dst")
    let home = Harness.freshFerryHome()
    let receiverStarted = try await ReceiverProcess.start(
      [
        "--json", "--dir", destination.path, "--name", "picky", "--accept-from",
        String(repeating: "0", count: 64),
      ], bus: .none, home: home)
    let (receiver, port) = (receiverStarted.process, receiverStarted.port)
    defer { receiver.signal(SIGKILL) }
    let file = try temporaryDirectory("retry-decline-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 100)
    let started = ContinuousClock.now
    let result = try await run(
      Harness.ferryBinary,
      ["send", "--json", "--address", "127.0.0.1:\(port)", "--retry-for", "60", file.path],
      environment: TestEnvironment.withoutBus())
    #expect(result.status == 4, "\(result.stderr)")
    // At once, where a retry would have waited at least its first second: the margin for
    // starting the sender on a loaded machine.
    #expect(ContinuousClock.now - started < Harness.margin)
    #expect(!result.stdout.contains("\"retrying\""), "\(result.stdout)")
  }

  @Test(
    "a partial file nobody resumed for --keep-partial-days is removed at the next offer, and said")
  func stalePartials() async throws {
    let destination = try temporaryDirectory("stale-dst")
    let staging = destination.appendingPathComponent(".ferry-partial")
    try FileManager.default.createDirectory(
      at: staging, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    let old = staging.appendingPathComponent("0123456789abcdef.part")
    try writeFile(old, size: 5000)
    var times = [
      timespec(tv_sec: time(nil) - 3 * 86_400, tv_nsec: 0),
      timespec(tv_sec: time(nil) - 3 * 86_400, tv_nsec: 0),
    ]
    #expect(utimensat(AT_FDCWD, old.path, &times, 0) == 0)
    let recent = staging.appendingPathComponent("fedcba9876543210.part")
    try writeFile(recent, size: 100)
    let (receiver, port) = try await receiver(
      port: 0, destination: destination, home: Harness.freshFerryHome(),
      options: ["--keep-partial-days", "2"])
    defer { receiver.signal(SIGKILL) }
    let file = try temporaryDirectory("stale-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 100)
    let result = try await run(
      Harness.ferryBinary, ["send", "--address", "127.0.0.1:\(port)", file.path],
      environment: TestEnvironment.withoutBus())
    #expect(result.status == 0, "\(result.stderr)")
    let cleaned = await receiver.waitForLine { $0.contains("\"staging-cleaned\"") }
    let fields = try #require(cleaned.flatMap { jsonObject($0.text) }, "\(receiver.stdout)")
    #expect(fields["files"] as? Int == 1)
    #expect(fields["bytes"] as? Int == 5000)
    #expect(!FileManager.default.fileExists(atPath: old.path))
    #expect(FileManager.default.fileExists(atPath: recent.path), "a recent partial stays")
    #expect(
      await receiver.waitForLine(onStderr: true) { $0.contains("Removed 1 partial file ") } != nil,
      "\(receiver.stderr)")
  }
}
