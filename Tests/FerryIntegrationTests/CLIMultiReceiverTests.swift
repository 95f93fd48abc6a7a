import Ferry
import Foundation
import Testing

/// One `ferry send` and several receivers: repeated `--to`, and the choice without it.
@Suite(
  "ferry send with several receivers", .timeLimit(.minutes(3)), .needsLocalAvahi, .endsItsProcesses)
struct CLIMultiReceiverTests {
  @Test(
    "two --to deliver to both; without --to a script gets exit 3 and the list, a terminal a choice"
  )
  func severalReceivers() async throws {
    let type = Harness.uniqueServiceType()
    let left = try temporaryDirectory("multi-left")
    let right = try temporaryDirectory("multi-right")
    var receivers: [ChildProcess] = []
    defer {
      for receiver in receivers { receiver.signal(SIGKILL) }
    }
    for (name, destination) in [("left", left), ("right", right)] {
      let receiver = try await ReceiverProcess.start(
        ["--yes", "--json", "--dir", destination.path, "--service", type, "--name", name],
        bus: .harness
      ).process
      receivers.append(receiver)
    }
    let source = try temporaryDirectory("multi-src")
    let folder = source.appendingPathComponent("album")
    for index in 0..<20 {
      try writeFile(
        folder.appendingPathComponent("disc\(index % 2)/track\(index).flac"),
        size: 40_000 + index * 1000, seed: UInt64(index))
    }
    let home = Harness.freshFerryHome()

    let both = try await run(
      Harness.ferryBinary,
      ["send", "--json", "--to", "left", "--to", "right", "--service", type, folder.path],
      environment: ["FERRY_HOME": home], timeout: .seconds(60))
    #expect(both.status == 0, "\(both.stderr)")
    let done = both.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }
      .filter { $0["event"] as? String == "done" }
    #expect(Set(done.compactMap { $0["peer"] as? String }) == ["left", "right"])
    #expect(done.allSatisfy { $0["stored"] as? Int == 20 })
    #expect(try tree(left.appendingPathComponent("album")) == tree(folder))
    #expect(try tree(right.appendingPathComponent("album")) == tree(folder))

    let pick = source.appendingPathComponent("pick.txt")
    try writeFile(pick, size: 5000, seed: 9)
    // The whole of a test's patience to find them (the run's own limit beyond it, to see the
    // exit status ferry gives); the list ends the wait once the browse settles.
    let script = try await run(
      Harness.ferryBinary, ["send", "--service", type, "--timeout", "60", pick.path],
      environment: ["FERRY_HOME": home], timeout: .seconds(90))
    #expect(script.status == 3, "\(script.stderr)")
    #expect(script.stderr.contains("several receivers"))
    #expect(script.stderr.contains("left") && script.stderr.contains("right"))

    let terminal = try ChildProcess.ferry(
      ["send", "--service", type, "--timeout", "60", pick.path],
      environment: ["FERRY_HOME": home], terminal: true)
    #expect(await terminal.waitForText("Send to which?"), "\(terminal.transcript)")
    #expect(terminal.transcript.contains("1) \"left\""))
    #expect(terminal.transcript.contains("2) \"right\""))
    terminal.type("2\n")
    #expect(await terminal.waitForExit() == 0, "\(terminal.transcript)")
    #expect(try sha256(of: right.appendingPathComponent("pick.txt")) == sha256(of: pick))
    #expect(!FileManager.default.fileExists(atPath: left.appendingPathComponent("pick.txt").path))
  }
}
