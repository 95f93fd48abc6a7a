import Ferry
import Foundation
import Testing

/// `ferry send`'s exit codes for the ways a send can fail before anything is transferred.
@Suite("ferry send exit codes", .timeLimit(.minutes(3)), .needsLocalAvahi, .endsItsProcesses)
struct CLIExitCodeTests {
  @Test("an invalid service type exits 2 and says which rule it breaks")
  func invalidService() async throws {
    let file = try temporaryDirectory("exit-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    let result = try await run(
      Harness.ferryBinary, ["send", "--json", "--service", "bad--type", file.path])
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.contains("hyphen"), "\(result.stderr)")
    let event = jsonObject(result.stdout.split(separator: "\n").last.map(String.init) ?? "")
    #expect(event?["code"] as? String == "invalid-service-type")
  }

  @Test("a file named --json is a file: its failure is reported for people, not as JSON")
  func fileNamedJSON() async throws {
    // No file of that name exists where the tests run; the old argv scan took it for the flag.
    let result = try await run(
      Harness.ferryBinary, ["send", "--address", "127.0.0.1:9", "--", "--json"])
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.contains("--json"), "\(result.stderr)")
    #expect(result.stdout.isEmpty, "\(result.stdout)")
  }

  @Test("--to ignores case and surrounding spaces; a name matching nobody lists who was found")
  func nameMatching() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("kitchen-dst")
    let receiver = try await ReceiverProcess.start(
      ["-y", "-j", "-d", destination.path, "--name", "Kitchen laptop", "--service", type],
      bus: .harness
    ).process
    defer { receiver.signal(SIGKILL) }
    let file = try temporaryDirectory("kitchen-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    // The whole of a test's patience to find it (the run's own limit beyond it, to see the
    // exit status ferry gives).
    let sent = try await run(
      Harness.ferryBinary,
      ["send", "-t", " kitchen LAPTOP ", "--timeout", "60", "--service", type, file.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()], timeout: .seconds(90))
    #expect(sent.status == 0, "\(sent.stderr)")
    // A send that can only time out, so briefly; on a loaded machine its 2 s may end before
    // it resolved the receiver it saw (then it names nobody): sent again until it does.
    func partialSend() async throws -> (status: Int32, stdout: String, stderr: String) {
      try await run(
        Harness.ferryBinary,
        ["send", "-t", "Kitchen", "--timeout", "2", "--service", type, file.path],
        environment: ["FERRY_HOME": Harness.freshFerryHome()])
    }
    var partial = try await partialSend()
    let deadline = ContinuousClock.now + Harness.patience
    while !partial.stderr.contains("found instead") && ContinuousClock.now < deadline {
      partial = try await partialSend()
    }
    #expect(partial.status == 3)
    #expect(partial.stderr.contains("found instead"), "\(partial.stderr)")
    #expect(partial.stderr.contains("\"Kitchen laptop\""), "\(partial.stderr)")
  }

  @Test(
    "a send that finds nobody says, after a few seconds, what it waits for and what to try (a phone: --localsend)"
  )
  func stillLooking() async throws {
    let file = try temporaryDirectory("paper-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    let sender = try ChildProcess.ferry(
      [
        "send", "--to", "nobody-here", "--timeout", "60", "--service",
        Harness.uniqueServiceType(), file.path,
      ])
    defer { sender.signal(SIGKILL) }
    let said = await sender.waitForLine(onStderr: true) { $0.contains("Still looking for") }
    let line = try #require(said, "\(sender.stderr)")
    #expect(line.text.contains("--localsend"), "\(line.text)")
    #expect(line.text.contains("--address"), "\(line.text)")
    // Said after the few seconds, not at once (the process's start is the machine's).
    #expect(line.time - sender.started >= .seconds(5), "\(line.text)")  // ReceiverFinder.hintAfter
  }

  @Test(
    "a LocalSend device whose TLS handshake never finishes is given up on after 30 s, not later"
  )
  func stalledLocalSendHandshake() async throws {
    // The kernel completes the TCP handshake into the backlog; nobody ever answers the
    // ClientHello.
    let (listener, port) = loopbackListener()
    defer { close(listener) }
    let file = try temporaryDirectory("exit-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    let started = ContinuousClock.now
    let sent = try await run(
      Harness.ferryBinary,
      ["send", "--localsend", "--retry-for", "0", "--address", "127.0.0.1:\(port)", file.path],
      environment: TestEnvironment.withoutBus(), timeout: .seconds(30) + Harness.patience)
    let took = ContinuousClock.now - started
    #expect(sent.status == 3, "\(sent.stderr)")
    #expect(sent.stderr.contains("no answer in time"), "\(sent.stderr)")
    // The promise (docs/LOCALSEND.md): 30 s for the handshake, checked each second.
    #expect(
      took >= .seconds(30) && took < .seconds(31) + Harness.margin, "took \(took): \(sent.stderr)")
  }

  @Test("no receiver within --timeout exits 3, after the timeout and not long after")
  func noPeer() async throws {
    let file = try temporaryDirectory("exit-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    let type = Harness.uniqueServiceType()
    let started = ContinuousClock.now
    let named = try await run(
      Harness.ferryBinary,
      ["send", "--to", "ghost", "--timeout", "2", "--service", type, file.path])
    let took = ContinuousClock.now - started
    #expect(named.status == 3, "\(named.stderr)")
    #expect(named.stderr.contains("no receiver 'ghost'"))
    #expect(named.stderr.contains("'ferry browse' lists who can be seen"), "\(named.stderr)")
    // Not before the promised 2 s, nor later than they and the margin for a loaded machine.
    #expect(took >= .seconds(2) && took < .seconds(2) + Harness.margin, "took \(took)")
    let anyone = try await run(
      Harness.ferryBinary, ["send", "--timeout", "1", "--service", type, file.path])
    #expect(anyone.status == 3, "\(anyone.stderr)")
  }

  @Test(
    "--to with another fingerprint exits 5: by --address, and for an impostor advertising a key it lacks"
  )
  func fingerprintMismatch() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("exit-dst")
    let file = try temporaryDirectory("exit-src").appendingPathComponent("secret.txt")
    try writeFile(file, size: 1000)
    let started = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--service", type, "--name", "real"],
      bus: .harness)
    let (receiver, port) = (started.process, started.port)
    defer { receiver.signal(SIGKILL) }
    let real = try #require(started.fingerprint)

    // Sixteen hex digits that are not the receiver's: refused inside the TLS handshake.
    let wrong = String(real.prefix(16).map { $0 == "0" ? "1" : "0" })
    let direct = try await run(
      Harness.ferryBinary, ["send", "--address", "127.0.0.1:\(port)", "--to", wrong, file.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    #expect(direct.status == 5, "\(direct.stderr)")
    #expect(direct.stderr.contains("authentication"), "\(direct.stderr)")

    // An impostor publishes the real receiver's port under another key's fingerprint.
    let other = try await run(
      Harness.ferryBinary, ["identity", "--json"],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    let claimed = try #require(
      jsonObject(other.stdout.trimmingCharacters(in: .newlines))?["fingerprint"] as? String)
    let impostor = try ChildProcess(
      "/usr/bin/avahi-publish-service",
      ["-s", "impostor", "_\(type)._tcp", "\(port)", "v=1", "fp=\(claimed)"])
    defer { impostor.signal(SIGKILL) }
    // Published once avahi says so; then found within the whole of a test's patience (the
    // run's own limit beyond it, to see the exit status ferry gives).
    try #require(
      await impostor.waitForLine(onStderr: true) { $0.hasPrefix("Established") } != nil,
      "\(impostor.stderr)")
    let discovered = try await run(
      Harness.ferryBinary,
      ["send", "--to", "impostor", "--service", type, "--timeout", "60", file.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()], timeout: .seconds(90))
    #expect(discovered.status == 5, "\(discovered.stderr)")

    #expect(!receiver.stdout.contains("\"invitation\""), "the receiver was never asked")
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: destination.path)
        .filter { $0 != ".ferry-partial" }.isEmpty)
  }

  @Test(
    "a receiver whose name is trusted with another key: warned, refused in a script (exit 5), sent with --to its new prefix"
  )
  func keyChanged() async throws {
    let type = Harness.uniqueServiceType()
    let file = try temporaryDirectory("key-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    let senderHome = Harness.freshFerryHome()
    func receiver(_ label: String, once: Bool) async throws -> ReceiverProcess {
      try await ReceiverProcess.start(
        ["--yes", "--json", "--dir", try temporaryDirectory(label).path]
          + (once ? ["--once"] : []) + ["--service", type, "--name", "desk"],
        bus: .harness)
    }
    // The whole of a test's patience to find it and be answered (the run's own limit beyond
    // it, to see the exit status ferry gives).
    func send(_ to: String) async throws -> (status: Int32, stdout: String, stderr: String) {
      try await run(
        Harness.ferryBinary,
        ["send", "--json", "--to", to, "--service", type, "--timeout", "60", file.path],
        environment: ["FERRY_HOME": senderHome], timeout: .seconds(90))
    }

    // The first 'desk' is remembered once it accepts, and trusted: its name is pinned.
    let firstStarted = try await receiver("key-first", once: true)
    let first = firstStarted.process
    defer { first.signal(SIGKILL) }
    let firstKey = try #require(firstStarted.fingerprint)
    #expect(try await send("desk").status == 0)
    #expect(await first.waitForExit() == 0)
    let trusted = try await run(
      Harness.ferryBinary, ["trust", firstKey], environment: ["FERRY_HOME": senderHome])
    #expect(trusted.status == 0, "\(trusted.stderr)")

    // Another machine now calls itself 'desk' — once avahi let go of the first's name, which
    // a loaded machine may take a while to do (meanwhile it renames the second): started
    // again until it has the name.
    var secondStarted = try await receiver("key-second", once: false)
    let deadline = ContinuousClock.now + Harness.patience
    while secondStarted.name != "desk" && ContinuousClock.now < deadline {
      await secondStarted.stop()
      try await Task.sleep(for: .milliseconds(500))
      secondStarted = try await receiver("key-second", once: false)
    }
    let second = secondStarted.process
    defer { second.signal(SIGKILL) }
    try #require(
      secondStarted.name == "desk", "renamed \(secondStarted.name ?? "?"): the first not gone")
    let key = try #require(secondStarted.fingerprint)

    let refused = try await send("desk")
    #expect(refused.status == 5, "\(refused.stderr)")
    #expect(refused.stderr.contains("KEY CHANGED"))
    #expect(refused.stderr.contains("--to \(key.prefix(16))"), "\(refused.stderr)")
    let events = refused.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }
    #expect(
      events.contains {
        $0["event"] as? String == "key-changed" && $0["fingerprint"] as? String == key
      })
    #expect(events.last?["code"] as? String == "key-changed")
    #expect(!second.stdout.contains("\"invitation\""), "the impostor was invited")

    // Naming the new key is consent.
    #expect(try await send(String(key.prefix(16))).status == 0)
    #expect(await second.waitForLine { $0.contains("\"file-done\"") } != nil)
  }
}
