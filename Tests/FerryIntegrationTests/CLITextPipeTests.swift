import Foundation
import Testing

/// Text and pipes: `ferry send --text`, `ferry send -` (standard input as one file) and
/// `ferry receive --stdout` (one verified file to standard output), as a shell runs them.
/// Loopback, --address, no avahi-daemon.
@Suite("ferry send --text, send -, receive --stdout", .timeLimit(.minutes(2)), .endsItsProcesses)
struct CLITextPipeTests {

  /// A receiver with no terminal, its port taken from its `advertising` event (on stderr
  /// with --stdout).
  func receiver(_ arguments: [String]) async throws -> (ChildProcess, Int) {
    let receiver = try await ReceiverProcess.start(
      ["-j", "--yes", "--once"] + arguments, bus: .none)
    return (receiver.process, receiver.port)
  }

  @Test("--text: the receiver shows it (a text event, escaped lines), exit 0 on both ends")
  func text() async throws {
    let message = "the door code is 4711\nsecond line \u{1B}[2J with é"
    let (receiver, port) = try await receiver(["-d", try temporaryDirectory("text-dst").path])
    defer { receiver.signal(SIGKILL) }
    let sent = try await run(
      Harness.ferryBinary,
      ["send", "-j", "--address", "127.0.0.1:\(port)", "--text", message],
      environment: TestEnvironment.withoutBus())
    #expect(sent.status == 0, "\(sent.stderr)")
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 0, "\(receiver.stderr)")
    let events = receiver.stdoutLines.compactMap { jsonObject($0.text) }
    let invitation = events.first { $0["event"] as? String == "invitation" }
    #expect(invitation?["text"] as? Bool == true, "\(receiver.stdout)")
    let shown = events.first { $0["event"] as? String == "text" }
    #expect(shown?["text"] as? String == message, "\(receiver.stdout)")

    // Without --json the lines are printed, escaped.
    let humanStarted = try await ReceiverProcess.start(
      ["--yes", "--once", "--port", "0", "-d", try temporaryDirectory("text-h").path], bus: .none)
    let (human, humanPort) = (humanStarted.process, humanStarted.port)
    defer { human.signal(SIGKILL) }
    let again = try await run(
      Harness.ferryBinary, ["send", "--address", "127.0.0.1:\(humanPort)", "--text", message],
      environment: TestEnvironment.withoutBus())
    #expect(again.status == 0, "\(again.stderr)")
    #expect(await human.waitForExit(timeout: Harness.patience) == 0)
    #expect(human.stdout.contains("the door code is 4711\n"), "\(human.stdout)")
    #expect(!human.stdout.contains("\u{1B}"), "\(human.stdout)")
  }

  @Test(
    "tar c | ferry send - piped into ferry receive --stdout | tar x: the tree arrives, nothing left in TMPDIR"
  )
  func pipes() async throws {
    let base = try temporaryDirectory("pipe")
    let source = base.appendingPathComponent("src")
    try FileManager.default.createDirectory(
      at: source.appendingPathComponent("sub"), withIntermediateDirectories: true)
    try writeFile(source.appendingPathComponent("sub/big.bin"), size: 3_000_000, seed: 3)
    try writeFile(source.appendingPathComponent("small.txt"), size: 10, seed: 4)
    let out = base.appendingPathComponent("out")
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: false)
    let tmp = base.appendingPathComponent("tmp")
    try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: false)
    let environment = TestEnvironment.noBus.merging([
      "TMPDIR": tmp.path, "FERRY": Harness.ferryBinary,
    ]) { $1 }

    let port = Int(freeLoopbackPort())
    let receiving = Task {
      try await run(
        "/bin/bash",
        [
          "-c",
          "set -o pipefail; cd \"$1\" && FERRY_HOME=\"$2\" \"$FERRY\" receive --stdout --yes "
            + "--port \(port) 2>\"$1/../receive.err\" | tar x",
          "bash", out.path, Harness.freshFerryHome(),
        ], environment: environment)
    }
    // The receiver is inside a shell pipeline: ready once its port listens.
    #expect(await waitUntilListening(port: UInt16(port)), "the receiver did not start")
    let sent = try await run(
      "/bin/bash",
      [
        "-c",
        "set -o pipefail; cd \"$1\" && tar c src | FERRY_HOME=\"$2\" \"$FERRY\" send "
          + "--address 127.0.0.1:\(port) --stdin-name src.tar -",
        "bash", base.path, Harness.freshFerryHome(),
      ], environment: environment)
    #expect(sent.status == 0, "\(sent.stderr)")
    let received = try await receiving.value
    let log =
      (try? String(contentsOf: base.appendingPathComponent("receive.err"), encoding: .utf8)) ?? ""
    #expect(received.status == 0, "\(received.stderr) \(log)")
    #expect(
      try sha256(of: out.appendingPathComponent("src/sub/big.bin"))
        == sha256(of: source.appendingPathComponent("sub/big.bin")))
    #expect(
      try sha256(of: out.appendingPathComponent("src/small.txt"))
        == sha256(of: source.appendingPathComponent("small.txt")))
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "TMPDIR left over")
    // The events went to stderr: stdout carried only the tar stream.
    #expect(log.contains("writing it to standard output"), "\(log)")
  }

  @Test(
    "--json into a pipe nobody reads: the receiver still answers, stores all 600 files and exits"
  )
  func stuckReader() async throws {
    let base = try temporaryDirectory("stuck-reader")
    let source = base.appendingPathComponent("many")
    try FileManager.default.createDirectory(at: source, withIntermediateDirectories: false)
    // 600 file-done events (~200 KB) fill the pipe's 64 KiB several times over.
    for index in 0..<600 {
      try writeFile(source.appendingPathComponent("f\(index).txt"), size: 20, seed: UInt64(index))
    }
    let destination = base.appendingPathComponent("dst")
    try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
    let port = Int(freeLoopbackPort())
    // `sleep` never reads its stdin: ferry's stdout is a pipe that fills and stays full.
    let receiver = try ChildProcess(
      "/bin/bash",
      [
        "-c",
        "{ \"$FERRY\" receive -j --yes --once --port \(port) -d \"$1\"; echo \"ferry exited $?\" >&2; }"
          + " | sleep 300",
        "bash", destination.path,
      ],
      environment: TestEnvironment.withoutBus(["FERRY": Harness.ferryBinary]))
    defer { receiver.signal(SIGKILL) }
    #expect(await waitUntilListening(port: UInt16(port)), "the receiver did not start")
    let sent = try await run(
      Harness.ferryBinary, ["send", "--address", "127.0.0.1:\(port)", source.path],
      environment: TestEnvironment.withoutBus())
    #expect(sent.status == 0, "\(sent.stderr) \(receiver.stderr)")
    #expect(
      try FileManager.default.contentsOfDirectory(
        atPath: destination.appendingPathComponent("many").path
      ).count == 600)
    // It exits once done, giving the stuck reader its 5 s (StandardStream.exitPatience).
    #expect(
      await receiver.waitForLine(onStderr: true, timeout: .seconds(5) + Harness.patience) {
        $0.contains("ferry exited 0")
      } != nil,
      "\(receiver.stderr)")
    // What stdout could not take is said on stderr, which was not held back by it.
    #expect(receiver.stderr.contains("ferry: stdout was not read"), "\(receiver.stderr)")
  }

  @Test("--stdout declines an offer of several files (exit 4); the input checks are exit 2")
  func checks() async throws {
    let (receiver, port) = try await receiver(["--stdout"])
    defer { receiver.signal(SIGKILL) }
    let folder = try temporaryDirectory("stdout-two")
    try writeFile(folder.appendingPathComponent("a"), size: 5)
    try writeFile(folder.appendingPathComponent("b"), size: 5)
    let two = try await run(
      Harness.ferryBinary, ["send", "--address", "127.0.0.1:\(port)", folder.path],
      environment: TestEnvironment.withoutBus())
    #expect(two.status == 4, "\(two.stderr)")
    #expect(two.stderr.contains("takes one file (--stdout)"), "\(two.stderr)")
    // Declined before it writes its own event (on stderr with --stdout): wait for that, so that
    // the receiver is through with the offer before its stdout is checked.
    #expect(
      await receiver.waitForEvent("declined", onStderr: true) != nil, "\(receiver.stderr)")
    #expect(receiver.stdout.isEmpty, "nothing reached stdout: \(receiver.stdout)")

    for (arguments, words) in [
      (["--text", "hi", "x.txt"], "--text is sent alone"),
      (["--text", ""], "--text is empty"),
      (["--text", String(repeating: "a", count: 9000)], "send longer text as a file"),
      (["--stdin-name", "a/b", "-"], "is not a file name"),
      (["--stdin-name", "x", "file.txt"], "give - among the files"),
      (["-", "-"], "can be given once"),
    ] {
      let result = try await run(
        Harness.ferryBinary, ["send", "--address", "127.0.0.1:9"] + arguments,
        environment: TestEnvironment.withoutBus())
      #expect(result.status == 2, "\(arguments): \(result.stderr)")
      #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
    }
  }
}
