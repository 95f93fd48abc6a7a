import Foundation
import Testing

/// `-v` and `FERRY_LOG`: the library's log lines on stderr when asked for, never otherwise.
/// Runs without avahi-daemon (no system bus): receive listens, send uses --address.
@Suite("ferry -v and FERRY_LOG", .timeLimit(.minutes(3)), .endsItsProcesses)
struct CLILoggingTests {

  /// Starts `ferry receive` and returns it with its port.
  func receiver(_ environment: [String: String], destination: URL) async throws -> (
    ChildProcess, Int
  ) {
    let receiver = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", "logged"], bus: .none,
      environment: environment)
    return (receiver.process, receiver.port)
  }

  @Test("FERRY_LOG=notice reports a refused connection; without it nothing is logged")
  func refusals() async throws {
    let destination = try temporaryDirectory("log-dst")
    let (logged, loggedPort) = try await receiver(["FERRY_LOG": "notice"], destination: destination)
    defer { logged.signal(SIGKILL) }
    let (quiet, quietPort) = try await receiver([:], destination: destination)
    defer { quiet.signal(SIGKILL) }

    for port in [loggedPort, quietPort] {
      let socket = try RawSocket(port: UInt16(port))
      socket.send(Array("GET /\u{1B}[2J HTTP/1.0\r\n\r\n".utf8))
      #expect(await socket.waitForClose(timeout: Harness.patience))
    }
    let line = await logged.waitForLine(onStderr: true) { $0.contains("TLS handshake failed") }
    #expect(line?.text.hasPrefix("ferry[notice] remote=127.0.0.1:") == true, "\(logged.stderr)")

    // A sender with -v logs its connection; the notice-level receiver does not log it.
    let file = try temporaryDirectory("log-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 100)
    let sender = try await run(
      Harness.ferryBinary, ["-v", "send", "--address", "127.0.0.1:\(loggedPort)", file.path],
      environment: TestEnvironment.withoutBus())
    #expect(sender.status == 0, "\(sender.stderr)")
    #expect(sender.stderr.contains("ferry[info]"), "\(sender.stderr)")
    #expect(sender.stderr.contains(": connected"), "\(sender.stderr)")
    // Once the receiver is through with the transfer (its end may come after the sender's),
    // it had its chance to log the connection.
    #expect(await logged.waitForEvent("done") != nil, "\(logged.stdout)")
    #expect(!logged.stderr.contains("ferry[info]"), "\(logged.stderr)")

    #expect(!quiet.stderr.contains("ferry["), "\(quiet.stderr)")
    #expect(!(logged.stderr + quiet.stderr).contains("\u{1B}"))
  }

  @Test("FERRY_LOG with no level's name is a usage error")
  func badLevel() async throws {
    let result = try await run(
      Harness.ferryBinary, ["identity"], environment: ["FERRY_LOG": "loud"])
    #expect(result.status == 2)
    #expect(result.stderr.contains("FERRY_LOG=loud is not a level"), "\(result.stderr)")
  }
}
