import Foundation
import Testing

/// `ferry receive --accept-trusted`: senders marked with `ferry trust` (by full fingerprint)
/// are accepted without asking; with no terminal everyone else is declined, on a terminal
/// asked. Loopback, --address, no avahi-daemon.
@Suite("ferry receive --accept-trusted", .timeLimit(.minutes(2)), .endsItsProcesses)
struct CLITrustedSendersTests {

  /// A fresh identity's home and its full fingerprint.
  func identity() async throws -> (home: String, fingerprint: String) {
    let home = Harness.freshFerryHome()
    let shown = try await run(
      Harness.ferryBinary, ["identity", "--json"], environment: ["FERRY_HOME": home])
    let fingerprint = try #require(jsonObject(shown.stdout)?["fingerprint"] as? String)
    return (home, fingerprint)
  }

  func send(_ file: URL, from home: String, port: Int) async throws -> (status: Int32, err: String)
  {
    let result = try await run(
      Harness.ferryBinary,
      ["send", "-j", "--retry-for", "0", "--address", "127.0.0.1:\(port)", file.path],
      environment: TestEnvironment.withoutBus(home: home))
    return (result.status, result.stderr)
  }

  @Test("a trusted sender is accepted without a terminal; a stranger is declined (exit 4)")
  func trustedAndStranger() async throws {
    let (friendHome, friend) = try await identity()
    let (strangerHome, _) = try await identity()
    let receiverHome = Harness.freshFerryHome()
    let trusted = try await run(
      Harness.ferryBinary, ["trust", friend, "--name", "friend"],
      environment: ["FERRY_HOME": receiverHome])
    #expect(trusted.status == 0, "\(trusted.stderr)")
    let destination = try temporaryDirectory("trusted-dst")
    let started = try await ReceiverProcess.start(
      ["--accept-trusted", "-j", "-d", destination.path, "--name", "box"], bus: .none,
      home: receiverHome)
    let (receiver, port) = (started.process, started.port)
    defer { receiver.signal(SIGKILL) }
    let file = try temporaryDirectory("trusted-src").appendingPathComponent("note.txt")
    try writeFile(file, size: 100)

    let fromFriend = try await send(file, from: friendHome, port: port)
    #expect(fromFriend.status == 0, "\(fromFriend.err)")
    #expect(try sha256(of: destination.appendingPathComponent("note.txt")) == sha256(of: file))
    let fromStranger = try await send(file, from: strangerHome, port: port)
    #expect(fromStranger.status == 4, "\(fromStranger.err)")
    #expect(fromStranger.err.contains("not an accepted sender"), "\(fromStranger.err)")
  }

  @Test("on a terminal the stranger is asked about, the trusted sender is not")
  func strangerAskedOnTerminal() async throws {
    let (friendHome, friend) = try await identity()
    let (strangerHome, _) = try await identity()
    let receiverHome = Harness.freshFerryHome()
    _ = try await run(
      Harness.ferryBinary, ["trust", friend], environment: ["FERRY_HOME": receiverHome])
    let destination = try temporaryDirectory("trusted-tty-dst")
    let started = try await ReceiverProcess.start(
      ["--accept-trusted", "-d", destination.path, "--name", "box"], bus: .none, home: receiverHome,
      terminal: true)
    let (receiver, port) = (started.process, started.port)
    defer { receiver.signal(SIGKILL) }
    let file = try temporaryDirectory("trusted-tty-src").appendingPathComponent("note.txt")
    try writeFile(file, size: 100)
    let fromFriend = try await send(file, from: friendHome, port: port)
    #expect(fromFriend.status == 0, "\(fromFriend.err)")
    #expect(!receiver.transcript.contains("Accept? [y/N]"), "\(receiver.transcript)")
    let stranger = Task { try await send(file, from: strangerHome, port: port) }
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    receiver.type("n\n")
    #expect(try await stranger.value.status == 4)
  }

  @Test("--accept-trusted with --yes is a usage error")
  func withYes() async throws {
    let result = try await run(
      Harness.ferryBinary, ["receive", "--accept-trusted", "--yes"],
      environment: TestEnvironment.noBus)
    #expect(result.status == 2)
  }
}
