import Foundation
import Testing

/// `ferry send -` with a pipe on standard input: the receiver is asked at once (size unknown),
/// and the bytes go as they are written, not after the pipe ends. Real processes, a named
/// pipe the test writes into, loopback, --address, no avahi-daemon.
@Suite("ferry send - streams a pipe", .timeLimit(.minutes(2)), .endsItsProcesses)
struct CLIStreamedInputTests {

  /// A FIFO to give a sender as standard input, and the test's end of it (opened read-write,
  /// so that neither end waits for the other; closing it ends the sender's input).
  func pipe(_ name: String) throws -> (path: String, writer: Int32) {
    let path = try temporaryDirectory(name).appendingPathComponent("input").path
    guard mkfifo(path, 0o600) == 0 else { throw POSIXError(.EIO) }
    let writer = open(path, O_RDWR | O_CLOEXEC)
    guard writer >= 0 else { throw POSIXError(.EIO) }
    return (path, writer)
  }

  func write(_ fd: Int32, _ bytes: [UInt8]) {
    var rest = bytes[...]
    while !rest.isEmpty {
      let written = rest.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
      if written <= 0 { return }
      rest = rest.dropFirst(written)
    }
  }

  static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
  }

  @Test(
    "asked before the pipe ends (size unknown); bytes arrive as they are written; the file is all of them"
  )
  func streamed() async throws {
    let destination = try temporaryDirectory("stream-dst")
    let receiverStarted = try await ReceiverProcess.start(
      ["-j", "--yes", "--once", "--port", "0", "-d", destination.path], bus: .none)
    let (receiver, port) = (receiverStarted.process, receiverStarted.port)
    defer { receiver.signal(SIGKILL) }
    let (input, writer) = try pipe("stream-in")
    var open = true
    defer { if open { close(writer) } }
    let sender = try ChildProcess.ferry(
      ["send", "-j", "--address", "127.0.0.1:\(port)", "--stdin-name", "dump.bin", "-"],
      environment: TestEnvironment.withoutBus(),
      stdin: input)
    defer { sender.signal(SIGKILL) }

    // Asked with nothing written yet: one file, of unknown size.
    let invitation = try #require(
      await receiver.waitForLine { $0.contains("\"invitation\"") }, "\(receiver.stdout)")
    let announced = try #require(jsonObject(invitation.text))
    #expect(announced["files"] as? Int == 1 && announced["streamed"] as? Int == 1)
    #expect(announced["bytes"] as? Int == 0)
    let offer = try #require(
      await receiver.waitForLine { $0.contains("\"offer\"") }, "\(receiver.stdout)")
    #expect(jsonObject(offer.text)?["streamed"] as? Int == 1)

    // Written while the pipe stays open: it arrives, its total not known yet.
    let first = Self.bytes(3_000_000, seed: 1)
    write(writer, first)
    let arrived = await receiver.waitForLine(timeout: Harness.patience) { line in
      guard let event = jsonObject(line), event["event"] as? String == "progress" else {
        return false
      }
      return (event["bytes"] as? Int ?? 0) >= 3_000_000
    }
    let progress = try #require(arrived.flatMap { jsonObject($0.text) }, "\(receiver.stdout)")
    #expect(progress["total"] is NSNull, "\(progress)")
    #expect(sender.isRunning, "the sender waits for the rest")

    let second = Self.bytes(1_000_000, seed: 2)
    write(writer, second)
    close(writer)
    open = false
    #expect(await sender.waitForExit() == 0, "\(sender.stderr)")
    #expect(await receiver.waitForExit() == 0, "\(receiver.stderr)")
    let saved = destination.appendingPathComponent("dump.bin")
    #expect(try Data(contentsOf: saved) == Data(first + second))
    // The sender's own file: not readable by others.
    let mode = try FileManager.default.attributesOfItem(atPath: saved.path)[.posixPermissions]
    #expect((mode as? Int ?? 0) & 0o077 == 0, "\(String(describing: mode))")
    let sendDone = sender.stdoutLines.compactMap { jsonObject($0.text) }.first {
      $0["event"] as? String == "done"
    }
    #expect(sendDone?["bytes"] as? Int == 4_000_000, "\(sender.stdout)")
    #expect(sendDone?["bytes_sent"] as? Int == 4_000_000, "\(sender.stdout)")
    let receiveDone = receiver.stdoutLines.compactMap { jsonObject($0.text) }.first {
      $0["event"] as? String == "done"
    }
    #expect(receiveDone?["bytes"] as? Int == 4_000_000, "\(receiver.stdout)")
    #expect(
      (try? FileManager.default.contentsOfDirectory(
        atPath: destination.appendingPathComponent(".ferry-partial").path))?.isEmpty ?? true)
  }

  @Test(
    "the person is asked about a file of unknown size before anything is read, and saying yes starts it"
  )
  func prompt() async throws {
    let (receiver, port) = try await CLIPaperCutTests.terminalReceiver(["--once"])
    defer { receiver.signal(SIGKILL) }
    let (input, writer) = try pipe("stream-prompt")
    var open = true
    defer { if open { close(writer) } }
    let sender = try ChildProcess.ferry(
      ["send", "--address", "127.0.0.1:\(port)", "--stdin-name", "log.txt", "-"],
      environment: TestEnvironment.withoutBus(),
      stdin: input)
    defer { sender.signal(SIGKILL) }
    #expect(
      await receiver.waitForText("1 file, size unknown (sent as it is read):"),
      "\(receiver.transcript)")
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    // Listed above the prompt, so there by now.
    #expect(receiver.transcript.contains("  log.txt"), "\(receiver.transcript)")
    receiver.type("y\n")
    write(writer, Array("one line\n".utf8))
    close(writer)
    open = false
    #expect(await sender.waitForExit() == 0, "\(sender.stderr)")
    #expect(await receiver.waitForText("Saved "), "\(receiver.transcript)")
    #expect(
      await receiver.waitForText("Received 1 file, 9 bytes from "), "\(receiver.transcript)")
  }

  @Test(
    "the receiver vanishes mid-stream: not retried (what was read is gone), exit 1 at once, saying so"
  )
  func notResumed() async throws {
    let destination = try temporaryDirectory("stream-cut")
    let receiverStarted = try await ReceiverProcess.start(
      ["-j", "--yes", "--port", "0", "-d", destination.path], bus: .none)
    let (receiver, port) = (receiverStarted.process, receiverStarted.port)
    defer { receiver.signal(SIGKILL) }
    let (input, writer) = try pipe("stream-cut-in")
    defer { close(writer) }
    let sender = try ChildProcess.ferry(
      ["send", "--address", "127.0.0.1:\(port)", "--retry-for", "60", "-"],
      environment: TestEnvironment.withoutBus(),
      stdin: input)
    defer { sender.signal(SIGKILL) }
    write(writer, Self.bytes(2_000_000, seed: 3))
    let arrived = await receiver.waitForLine(timeout: Harness.patience) { line in
      (jsonObject(line)?["bytes"] as? Int ?? 0) >= 2_000_000
    }
    #expect(arrived != nil, "\(receiver.stdout)")
    receiver.signal(SIGKILL)
    let started = ContinuousClock.now
    #expect(await sender.waitForExit(timeout: Harness.patience) == 1, "\(sender.stderr)")
    // The killed receiver's connection resets: given up at once, not after --retry-for's 60 s
    // (within the margin for a loaded machine).
    #expect(ContinuousClock.now - started < Harness.margin)
    #expect(sender.stderr.contains("cannot be resumed or sent again"), "\(sender.stderr)")
    #expect(!sender.stderr.contains("run the same send again"), "\(sender.stderr)")
  }
}
