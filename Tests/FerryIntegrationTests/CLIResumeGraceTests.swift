import Foundation
import Testing

/// `ferry receive --resume-grace`: a sender whose link was lost mid-transfer comes back with
/// `--retry-for` for the same files, and is taken back without a second question (a prompting
/// receiver) or without ending the receiver (`--once`). The link is cut by a TCP proxy between
/// them on loopback (both ends see a reset); no avahi-daemon (no system bus).
@Suite(
  "ferry receive takes a sender back after a lost link", .timeLimit(.minutes(3)), .endsItsProcesses)
struct CLIResumeGraceTests {

  /// A 1 GiB file (allocated, never written: quick to read).
  func bigFile(_ label: String) throws -> URL {
    let big = try temporaryDirectory(label).appendingPathComponent("big.iso")
    try writeAllocated(big, size: Int(1 << 30))
    return big
  }

  /// `ferry send --retry-for 30` of `file` through `proxy`; returns once bytes are moving, the
  /// link is then cut.
  func sendAndCut(_ file: URL, through proxy: CuttableProxy) async throws -> ChildProcess {
    let sender = try ChildProcess.ferry(
      ["send", "--json", "--address", "127.0.0.1:\(proxy.port)", "--retry-for", "30", file.path],
      environment: TestEnvironment.withoutBus())
    let moving = await sender.waitForLine(timeout: Harness.patience) {
      $0.contains("\"progress\"") && (jsonObject($0)?["bytes"] as? Int ?? 0) > 1 << 20
    }
    try #require(moving != nil, "no progress: \(sender.stdout) \(sender.stderr)")
    proxy.cut()
    return sender
  }

  @Test("a person said yes; the link is lost mid-transfer; the comeback is accepted without asking")
  func promptingReceiver() async throws {
    let destination = try temporaryDirectory("grace-dst")
    let receiver = try await ReceiverProcess.start(
      ["--dir", destination.path, "--name", "desk"], bus: .none, terminal: true
    ).process
    defer { receiver.signal(SIGKILL) }
    let port = try #require(
      receiver.transcript.firstMatch(of: /port (\d+)\./).flatMap { UInt16($0.1) },
      "\(receiver.transcript)")
    let proxy = CuttableProxy(to: port)
    defer { proxy.stop() }
    let file = try bigFile("grace-src")
    let sender = try ChildProcess.ferry(
      ["send", "--json", "--address", "127.0.0.1:\(proxy.port)", "--retry-for", "30", file.path],
      environment: TestEnvironment.withoutBus())
    defer { sender.signal(SIGKILL) }
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    receiver.type("y\n")
    let moving = await sender.waitForLine(timeout: Harness.patience) {
      $0.contains("\"progress\"") && (jsonObject($0)?["bytes"] as? Int ?? 0) > 1 << 20
    }
    try #require(moving != nil, "no progress: \(sender.stdout) \(sender.stderr)")
    proxy.cut()

    // A gigabyte on a loaded machine takes what it takes; the sender reports progress meanwhile.
    #expect(await sender.waitForExit(quietFor: Harness.patience) == 0, "\(sender.stderr)")
    let events = sender.stdoutLines.compactMap { jsonObject($0.text) }
    #expect(events.contains { $0["event"] as? String == "resumed" }, "\(sender.stdout)")
    #expect(proxy.accepted >= 2)
    // Said on the receiver's terminal, which the sender's exit does not wait for.
    #expect(await receiver.waitForText("without asking again"), "\(receiver.transcript)")
    let transcript = receiver.transcript
    // Asked once: the question's header is printed once per question.
    #expect(transcript.components(separatedBy: "wants to send").count - 1 == 1, "\(transcript)")
    #expect(try sha256(of: destination.appendingPathComponent("big.iso")) == sha256(of: file))
  }

  @Test("--yes --once: the link is lost mid-transfer; the receiver waits, takes it back, exits 0")
  func onceReceiver() async throws {
    let destination = try temporaryDirectory("grace-once-dst")
    let started = try await ReceiverProcess.start(
      ["--yes", "--once", "--json", "--dir", destination.path, "--name", "sink"], bus: .none)
    let (receiver, port) = (started.process, started.port)
    defer { receiver.signal(SIGKILL) }
    let proxy = CuttableProxy(to: UInt16(port))
    defer { proxy.stop() }
    let file = try bigFile("grace-once-src")
    let sender = try await sendAndCut(file, through: proxy)
    defer { sender.signal(SIGKILL) }

    #expect(await sender.waitForExit(quietFor: Harness.patience) == 0, "\(sender.stderr)")
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 0, "\(receiver.stderr)")
    let accepted = receiver.stdoutLines.compactMap { jsonObject($0.text) }
      .filter { $0["event"] as? String == "accepted" }
    #expect(accepted.count == 2, "\(receiver.stdout)")
    #expect(try sha256(of: destination.appendingPathComponent("big.iso")) == sha256(of: file))
  }
}
