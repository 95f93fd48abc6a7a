import Ferry
import Foundation
import Testing

/// The built `ferry` binary, run as a user would: exit codes, stderr messages, JSON lines.
@Suite("ferry CLI", .timeLimit(.minutes(3)), .endsItsProcesses)
struct CLITests {
  @Test(
    "an invalid --service exits 2 with the rule on stderr",
    arguments: [
      (["browse", "--service", "my_app"], "'_' is not allowed"),
      (["browse", "--service", "abcdefghijklmnop"], "at most 15"),
      (["browse", "--service", ""], "1 to 15 characters"),
      (["browse", "--service", "-x"], "hyphen at the start"),
      (["receive", "--service", "a--b"], "next to each other"),
      (["receive", "--service", "日本"], "\\u{65E5}"),
    ])
  func invalidServiceType(arguments: [String], message: String) async throws {
    let result = try await run(Harness.ferryBinary, arguments)
    #expect(result.status == 2)
    #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
    #expect(result.stderr.contains("RFC 6335"))
    #expect(result.stdout.isEmpty)
  }

  @Test("usage errors exit 2, not ArgumentParser's 64")
  func usageErrors() async throws {
    #expect(try await run(Harness.ferryBinary, ["browse", "--no-such-flag"]).status == 2)
    #expect(try await run(Harness.ferryBinary, ["browse", "--timeout", "-1"]).status == 2)
    #expect(try await run(Harness.ferryBinary, ["no-such-command"]).status == 2)
  }

  @Test("an offer the receiver would refuse fails at once with exit 2, before any discovery")
  func badOfferBeforeDiscovery() async throws {
    let root = NSTemporaryDirectory() + "ferry-bad-offer-\(UUID().uuidString)"
    for folder in ["tree", "one", "two"] {
      try FileManager.default.createDirectory(
        atPath: "\(root)/\(folder)", withIntermediateDirectories: true)
    }
    for file in ["tree/fine.txt", "tree/new\nline.txt", "one/x.txt", "two/x.txt"] {
      try Data(file.utf8).write(to: URL(fileURLWithPath: "\(root)/\(file)"))
    }
    try FileManager.default.createSymbolicLink(
      atPath: "\(root)/tree/link", withDestinationPath: "fine.txt")
    // No bus at all: reaching discovery would exit 6.
    let environment = TestEnvironment.withoutBus()
    let unsafe = try await run(
      Harness.ferryBinary, ["send", "--json", "\(root)/tree"], environment: environment)
    #expect(unsafe.status == 2)
    #expect(unsafe.stderr.contains("tree/new\\u{A}line.txt"), "\(unsafe.stderr)")
    #expect(unsafe.stderr.contains("control characters"))
    #expect(unsafe.stderr.contains("Leaving out \(root)/tree/link: a symbolic link"))
    let event = try #require(
      jsonObject(unsafe.stdout.split(separator: "\n").last.map(String.init) ?? ""))
    #expect(event["code"] as? String == "invalid-path")

    let clash = try await run(
      Harness.ferryBinary, ["send", "\(root)/one/x.txt", "\(root)/two/x.txt"],
      environment: environment)
    #expect(clash.status == 2)
    #expect(clash.stderr.contains("two different files would arrive under this name"))

    let pipe = "\(root)/pipe"
    #expect(mkfifo(pipe, 0o600) == 0)
    let special = try await run(Harness.ferryBinary, ["send", pipe], environment: environment)
    #expect(special.status == 2)
    #expect(special.stderr.contains("a named pipe, not a regular file"))
  }

  @Test("--version, --help with examples, and completion scripts exit 0")
  func helpAndVersion() async throws {
    let version = try await run(Harness.ferryBinary, ["--version"])
    #expect(version.status == 0)
    #expect(version.stdout.contains("0."))
    let help = try await run(Harness.ferryBinary, ["browse", "--help"])
    #expect(help.status == 0)
    #expect(help.stdout.contains("Examples:"))
    #expect(help.stdout.contains("--timeout"))
    for shell in ["bash", "zsh", "fish"] {
      let completion = try await run(Harness.ferryBinary, ["--generate-completion-script", shell])
      #expect(completion.status == 0)
      #expect(completion.stdout.contains("browse"))
    }
  }

  @Test("with no system bus at all, browse exits 6 and says how to start avahi-daemon")
  func noBus() async throws {
    let environment = TestEnvironment.noBus
    let human = try await run(Harness.ferryBinary, ["browse"], environment: environment)
    #expect(human.status == 6)
    #expect(human.stderr.contains("avahi-daemon"))
    #expect(human.stderr.contains("--address"))
    #expect(human.stdout.isEmpty)

    let json = try await run(Harness.ferryBinary, ["browse", "--json"], environment: environment)
    #expect(json.status == 6)
    let event = try #require(
      jsonObject(json.stdout.split(separator: "\n").last.map(String.init) ?? ""))
    #expect(event["event"] as? String == "error")
    #expect(event["code"] as? String == "discovery-unavailable")
    #expect(event["exit"] as? Int == 6)
    #expect(event["timestamp"] is String)
  }

  @Test(
    "on a bus without avahi-daemon, browse and send exit 6",
    .enabled(if: Harness.noDaemonBus != nil, "needs scripts/harness/local.sh (run scripts/test)"))
  func noDaemon() async throws {
    let environment = ["DBUS_SYSTEM_BUS_ADDRESS": Harness.noDaemonBus!]
    let file = try temporaryDirectory("nodaemon").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    for command in [["browse"], ["send", "--to", "desk", file.path], ["send", file.path]] {
      let result = try await run(Harness.ferryBinary, command, environment: environment)
      #expect(result.status == 6, "\(command): \(result.stderr)")
      #expect(result.stderr.contains("Daemon not running"))
      #expect(result.stderr.contains("avahi-daemon"))
    }
  }

  @Test(
    "with no avahi-daemon at all, receive still listens and send --address delivers (--files-from -0)"
  )
  func addressWithoutDiscovery() async throws {
    let environment = TestEnvironment.withoutBus()
    let destination = try temporaryDirectory("direct-dst")
    let started = try await ReceiverProcess.start(
      ["--yes", "--once", "--json", "--dir", destination.path, "--name", "direct"], bus: .none,
      home: environment["FERRY_HOME"]!)
    let (receiver, port) = (started.process, started.port)
    defer { receiver.signal(SIGKILL) }
    // Said before it listens.
    #expect(!receiver.events("discovery-unavailable").isEmpty, "\(receiver.stdout)")
    #expect(started.discoverable == false)
    #expect(
      await receiver.waitForLine(onStderr: true) { $0.contains("--address") } != nil,
      "\(receiver.stderr)")

    // A second receiver on the same port says what is wrong in words, and exits 2.
    let clash = try await run(
      Harness.ferryBinary,
      ["receive", "--yes", "--port", "\(port)", "--dir", destination.path], environment: environment
    )
    #expect(clash.status == 2)
    #expect(
      clash.stderr.contains("cannot listen on port \(port): another program"), "\(clash.stderr)")

    // A NUL-separated list on standard input, relative paths keeping their folders.
    let source = try temporaryDirectory("direct-src")
    let names = ["top.txt", "docs/guide.md", "docs/img/logo with space.png"]
    for (index, name) in names.enumerated() {
      try writeFile(source.appendingPathComponent(name), size: 1000 * (index + 1), seed: 7)
    }
    let list = source.appendingPathComponent("list")
    try Data((names.map { "./" + $0 }.joined(separator: "\0") + "\0").utf8).write(to: list)
    let sender = try ChildProcess(
      "/bin/sh",
      [
        "-c", "cd \"$1\" && exec \"$2\" send --json --address \"127.0.0.1:$3\" --files-from - -0",
        "sh", source.path, Harness.ferryBinary, "\(port)",
      ],
      environment: TestEnvironment.noBus,
      stdin: list.path)
    #expect(await sender.waitForExit() == 0, "\(sender.stderr)")
    #expect(await receiver.waitForExit() == 0, "\(receiver.stderr)")
    for name in names {
      #expect(
        try sha256(of: destination.appendingPathComponent(name))
          == sha256(of: source.appendingPathComponent(name)), "\(name)")
    }
    // XXH3-128 by default: each file-done names it, with xxhsum's digest (and no sha256).
    let done = sender.stdoutLines.compactMap { jsonObject($0.text) }
      .filter { $0["event"] as? String == "file-done" }
    #expect(done.allSatisfy { $0["checksum"] as? String == "xxh3-128" && $0["sha256"] is NSNull })
    #expect(
      Set(done.compactMap { $0["digest"] as? String })
        == Set(try names.map { try xxh3(of: source.appendingPathComponent($0)) }))
  }
}

/// The CLI against the loopback avahi-daemon.
@Suite("ferry CLI with avahi-daemon", .timeLimit(.minutes(3)), .needsLocalAvahi, .endsItsProcesses)
struct CLILocalAvahiTests {
  @Test("browse --timeout exits 3 when no peer is found")
  func nothingFound() async throws {
    let type = Harness.uniqueServiceType()
    let result = try await run(
      Harness.ferryBinary, ["browse", "--service", type, "--timeout", "1"])
    #expect(result.status == 3)
    #expect(result.stderr.contains("no peer"))
  }

  @Test("receive is found by browse --json; SIGINT withdraws it and exits 130")
  func receiveAndBrowse() async throws {
    let type = Harness.uniqueServiceType()
    let name = "cli peer \(Int.random(in: 1000...9999))"
    let started = try await ReceiverProcess.start(
      ["--yes", "--dir", NSTemporaryDirectory(), "--service", type, "--name", name, "--json"],
      bus: .harness, home: Harness.testFerryHome)
    let (receiver, port) = (started.process, started.port)
    let fingerprint = try #require(started.fingerprint)

    let browser = try ChildProcess.ferry(["browse", "--service", type, "--json"])
    let foundLine = await browser.waitForLine { $0.contains("peer-found") }
    let found = try #require(foundLine.flatMap { jsonObject($0.text) }, "\(browser.stderr)")
    #expect(found["name"] as? String == name)
    #expect(found["fingerprint"] as? String == fingerprint)
    #expect(found["port"] as? Int == port)
    #expect(found["service"] as? String == "_\(type)._tcp")
    let addresses = try #require(found["addresses"] as? [[String: Any]])
    #expect(
      addresses.contains {
        $0["ip"] as? String == "127.0.0.1" && $0["interface"] as? String == "lo"
      })

    receiver.signal(SIGINT)
    #expect(await receiver.waitForExit() == 130)
    let lostLine = await browser.waitForLine { $0.contains("peer-lost") }
    #expect(lostLine.flatMap { jsonObject($0.text) }?["name"] as? String == name)

    browser.signal(SIGINT)
    #expect(await browser.waitForExit() == 130)
    for line in browser.stdoutLines {
      #expect(jsonObject(line.text) != nil, "not JSON: \(line.text)")
    }
  }

  @Test("browse prints human lines with + and -")
  func humanOutput() async throws {
    let type = Harness.uniqueServiceType()
    let receiver = try await ReceiverProcess.start(
      ["--yes", "--dir", NSTemporaryDirectory(), "--service", type, "--name", "human"],
      bus: .harness, home: Harness.testFerryHome
    ).process
    defer { receiver.signal(SIGKILL) }
    // Listening is not yet published and resolved: on a loaded machine a 3 s browse may end
    // before it lists the receiver, so it is run again until it does.
    func browse() async throws -> (status: Int32, stdout: String, stderr: String) {
      try await run(Harness.ferryBinary, ["browse", "--service", type, "--timeout", "3"])
    }
    var result = try await browse()
    let deadline = ContinuousClock.now + Harness.patience
    while !result.stdout.contains("+ human [") && ContinuousClock.now < deadline {
      result = try await browse()
    }
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("+ human ["))
    #expect(result.stdout.contains("127.0.0.1:"))
  }
}
