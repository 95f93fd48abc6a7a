import Foundation
import Testing

/// What a new user ran into in an afternoon (issue 25), each seen as that user sees it: through a
/// pseudo-terminal, or in the files and exit codes a script reads. Loopback, no avahi-daemon.
@Suite("ferry's paper cuts, as a new user meets them", .timeLimit(.minutes(3)), .endsItsProcesses)
struct CLIPaperCutTests {

  @Test("peers shows dates as 2026-11-25 17:20:20, never an escaped \\u{202F}, in every locale")
  func peersDates() async throws {
    let home = Harness.freshFerryHome()
    let fingerprint = String(repeating: "0123456789ABCDEF", count: 4)
    _ = try await run(
      Harness.ferryBinary, ["trust", fingerprint, "--name", "Office box"],
      environment: ["FERRY_HOME": home])
    for locale in ["C.UTF-8", "en_US.UTF-8", "de_DE.UTF-8", "POSIX"] {
      let listed = try await run(
        Harness.ferryBinary, ["peers"],
        environment: ["FERRY_HOME": home, "LANG": locale, "LC_ALL": locale])
      #expect(listed.status == 0)
      #expect(!listed.stdout.contains("\\u{"), "\(locale): \(listed.stdout)")
      #expect(
        listed.stdout.contains(#/last seen \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)/#),
        "\(locale): \(listed.stdout)")
    }
  }

  @Test("HOME is the home folder: identity is made in $HOME/.config/ferry, ~/ in the config too")
  func homeFromEnvironment() async throws {
    let home = try temporaryDirectory("home")
    // Empty is unset to Ferry (the harness would fill in a FERRY_HOME that is missing).
    let environment = ["FERRY_HOME": "", "XDG_CONFIG_HOME": "", "HOME": home.path]
    let made = try await run(Harness.ferryBinary, ["identity"], environment: environment)
    #expect(made.status == 0, "\(made.stderr)")
    #expect(
      FileManager.default.fileExists(
        atPath: home.appendingPathComponent(".config/ferry/identity-key.pem").path))
    #expect(made.stdout.contains(home.path), "\(made.stdout)")
    // "~/" in the config is $HOME too: the doctor checks that folder.
    let config = home.appendingPathComponent("c.toml")
    try "[receive]\ndir = \"~/inbox\"\nmkdir = true\n".write(
      to: config, atomically: true, encoding: .utf8)
    let doctor = try await run(
      Harness.ferryBinary, ["doctor", "--config", config.path],
      environment: environment.merging(TestEnvironment.noBus) { $1 })
    #expect(doctor.stdout.contains("\(home.path)/inbox does not exist yet"), "\(doctor.stdout)")
  }

  @Test(
    "config mistakes: quotes shown plainly, a missing dir names file and line, dotted keys work")
  func configMessages() async throws {
    let folder = try temporaryDirectory("config")
    func receive(_ text: String) async throws -> (status: Int32, stderr: String) {
      let file = folder.appendingPathComponent("config-\(UUID().uuidString).toml")
      try text.write(to: file, atomically: true, encoding: .utf8)
      let result = try await run(
        Harness.ferryBinary, ["receive", "--config", file.path, "--port", "0"],
        environment: TestEnvironment.withoutBus(),
        timeout: Harness.patience)
      return (result.status, result.stderr.replacingOccurrences(of: file.path, with: "FILE"))
    }
    let typo = try await receive("[receive]\naccept = \"yess\"\n")
    #expect(typo.status == 2)
    #expect(
      typo.stderr.contains(
        #"config FILE:2: 'accept' wants one of "ask", "trusted", "yes", not "yess""#),
      "\(typo.stderr)")
    let missing = try await receive(
      "[receive]\ndir = \"\(folder.path)/nowhere\"\nmkdir = false\naccept = \"yes\"\n")
    #expect(missing.status == 2)
    #expect(
      missing.stderr.contains("nowhere (dir, config FILE:2) does not exist (mkdir = true there"),
      "\(missing.stderr)")
    // A dotted key is TOML for the same thing: here, the folder is made, and the receiver runs
    // until it is stopped... so it is given a folder that is a file, to end at once.
    let notFolder = folder.appendingPathComponent("plain")
    try Data().write(to: notFolder)
    let dotted = try await receive(
      "receive.dir = \"\(notFolder.path)\"\nreceive.accept = \"yes\"\n")
    #expect(dotted.status == 2)
    #expect(
      dotted.stderr.contains("plain (dir, config FILE:1) is not a folder"), "\(dotted.stderr)")
  }

  @Test("receive --stdout refuses to write a file's bytes into a terminal: exit 2, says how")
  func standardOutputTerminal() async throws {
    let receiver = try ChildProcess.ferry(
      ["receive", "--stdout", "--yes"],
      environment: TestEnvironment.withoutBus(),
      terminal: true)
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 2)
    #expect(receiver.transcript.contains("redirect it"), "\(receiver.transcript)")
  }

  /// A receiver on a pseudo-terminal (no avahi-daemon: reached by address) and its port.
  static func terminalReceiver(_ extra: [String] = []) async throws -> (ChildProcess, Int) {
    let receiver = try await ReceiverProcess.start(
      ["--dir", try temporaryDirectory("paper-dst").path, "--port", "0"] + extra, bus: .none,
      terminal: true)
    return (receiver.process, receiver.port)
  }

  @Test(
    "30 files: both ends end with time and rate; the receiver lists 20 'Saved' lines and counts the rest"
  )
  func summaries() async throws {
    let (receiver, port) = try await Self.terminalReceiver(["--yes"])
    defer { receiver.signal(SIGKILL) }
    let folder = try temporaryDirectory("paper-many").appendingPathComponent("many")
    for index in 0..<30 {
      try writeFile(folder.appendingPathComponent("f\(index).txt"), size: 1000 + index)
    }
    try FileManager.default.createDirectory(
      at: folder.appendingPathComponent("empty"), withIntermediateDirectories: false)
    let sender = try ChildProcess.ferry(
      ["send", "--address", "127.0.0.1:\(port)", folder.path],
      environment: TestEnvironment.withoutBus(),
      terminal: true)
    defer { sender.signal(SIGKILL) }
    #expect(await sender.waitForExit() == 0, "\(sender.transcript)")
    #expect(
      sender.transcript.contains(
        #/Sent 30 files and 1 empty folder, 30 KB to \S+ in \d+\.\d s( \([0-9.]+ [KMG]?B/s\))?\./#),
      "\(sender.transcript)")
    #expect(
      await receiver.waitForText("Received 30 files and 1 empty folder"), "\(receiver.transcript)")
    #expect(
      await receiver.waitForText("11 more saved than listed above."), "\(receiver.transcript)")
    #expect(receiver.transcript.matches(of: /Saved \//).count == 20, "\(receiver.transcript)")
    #expect(
      receiver.transcript.contains(
        #/Received 30 files and 1 empty folder, 30 KB from .+ in \d+\.\d s/#),
      "\(receiver.transcript)")
  }

  @Test("JSON counts files and empty folders apart, the same in invitation, offer and both done")
  func folderCounts() async throws {
    let destination = try temporaryDirectory("paper-counts-dst")
    let receiverStarted = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--port", "0"], bus: .none)
    let (receiver, port) = (receiverStarted.process, receiverStarted.port)
    defer { receiver.signal(SIGKILL) }
    let folder = try temporaryDirectory("paper-counts").appendingPathComponent("tree")
    try writeFile(folder.appendingPathComponent("a.txt"), size: 10)
    try writeFile(folder.appendingPathComponent("sub/b.txt"), size: 20)
    for empty in ["e1", "sub/e2"] {
      try FileManager.default.createDirectory(
        at: folder.appendingPathComponent(empty), withIntermediateDirectories: true)
    }
    let sent = try await run(
      Harness.ferryBinary, ["send", "--json", "--address", "127.0.0.1:\(port)", folder.path],
      environment: TestEnvironment.withoutBus())
    #expect(sent.status == 0, "\(sent.stderr)")
    let sendDone = try #require(
      sent.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }.last)
    _ = await receiver.waitForLine { $0.contains("\"done\"") }
    let received = receiver.stdoutLines.compactMap { jsonObject($0.text) }
    for name in ["invitation", "offer", "done"] {
      let event = try #require(received.first { $0["event"] as? String == name }, "\(name)")
      #expect(event["files"] as? Int == 2, "\(name): \(event)")
      #expect(event["folders"] as? Int == 2, "\(name): \(event)")
    }
    #expect(sendDone["files"] as? Int == 2 && sendDone["folders"] as? Int == 2, "\(sendDone)")
  }

  @Test("a transfer standing still says 'stalled' on the sender's bar instead of its last rate")
  func stalledBar() async throws {
    let (receiver, port) = try await Self.terminalReceiver(["--yes"])
    defer { receiver.signal(SIGKILL) }
    let proxy = CuttableProxy(to: UInt16(port))
    defer { proxy.stop() }
    let file = try temporaryDirectory("paper-stall").appendingPathComponent("big.bin")
    // 1 GiB, allocated and never written: made at once, and not sent before the stall on a
    // fast machine.
    try writeAllocated(file, size: Int(1 << 30))
    let sender = try ChildProcess.ferry(
      ["send", "--address", "127.0.0.1:\(proxy.port)", file.path],
      environment: TestEnvironment.withoutBus(),
      terminal: true)
    defer { sender.signal(SIGKILL) }
    #expect(await sender.waitForText("/s"), "\(sender.transcript)")
    proxy.stall(true)
    #expect(
      await sender.waitForText("stalled 0:0", timeout: Harness.patience), "\(sender.transcript)")
    proxy.stall(false)
  }

  @Test("Ctrl-C at the receiver's own prompt says it declined, never that the sender withdrew")
  func interruptAtPrompt() async throws {
    let (receiver, port) = try await Self.terminalReceiver()
    defer { receiver.signal(SIGKILL) }
    let file = try temporaryDirectory("paper-src").appendingPathComponent("notes.txt")
    try writeFile(file, size: 1000, seed: 3)
    let sender = try ChildProcess.ferry(
      ["send", "--retry-for", "0", "--address", "127.0.0.1:\(port)", file.path],
      environment: TestEnvironment.withoutBus())
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    #expect(receiver.transcript.contains("Every sender is asked about here."))
    receiver.signal(SIGINT)
    #expect(await receiver.waitForExit() == 130)
    #expect(
      receiver.transcript.contains("declined: ferry receive is stopping"),
      "\(receiver.transcript)")
    #expect(!receiver.transcript.contains("withdrew"), "\(receiver.transcript)")
    #expect(await sender.waitForExit() == 4, "\(sender.stderr)")
    #expect(sender.stderr.contains("the receiver stopped"), "\(sender.stderr)")
  }

  @Test("on a terminal, error: is bold red; NO_COLOR, TERM=dumb or a pipe leave it plain")
  func colour() async throws {
    let config = try temporaryDirectory("colour").appendingPathComponent("bad.toml")
    try "[receive]\naccept = \"yess\"\n".write(to: config, atomically: true, encoding: .utf8)
    func transcript(_ environment: [String: String], terminal: Bool = true) async throws -> String {
      let child = try ChildProcess.ferry(
        ["receive", "--config", config.path],
        environment: TestEnvironment.withoutBus()
          .merging(environment) { $1 }, terminal: terminal)
      #expect(await child.waitForExit(timeout: Harness.patience) == 2)
      return terminal ? child.transcript : child.stderr
    }
    let red = "ferry: \u{1B}[1;31merror:\u{1B}[0m config"
    let coloured = try await transcript(["NO_COLOR": "", "TERM": "xterm"])
    #expect(coloured.contains(red), "\(coloured.debugDescription)")
    for plain in [
      try await transcript(["NO_COLOR": "1", "TERM": "xterm"]),
      try await transcript(["NO_COLOR": "", "TERM": "dumb"]),
      try await transcript(["NO_COLOR": "", "TERM": "xterm"], terminal: false),
    ] {
      #expect(plain.contains("ferry: error: config"), "\(plain.debugDescription)")
      #expect(!plain.contains("\u{1B}"), "\(plain.debugDescription)")
    }
  }

  @Test(
    "a mistyped command is said to be one, with the nearest; a folder that does not exist is said before the lack of a terminal"
  )
  func mistakes() async throws {
    let typo = try await run(Harness.ferryBinary, ["sned", "a.txt"])
    #expect(typo.status == 2, "\(typo.stderr)")
    #expect(typo.stderr.contains("'sned' is not a command"), "\(typo.stderr)")
    #expect(typo.stderr.contains("Did you mean 'ferry send'?"), "\(typo.stderr)")
    let far = try await run(Harness.ferryBinary, ["xyzzy"])
    #expect(far.status == 2 && !far.stderr.contains("Did you mean"), "\(far.stderr)")
    // No terminal and no policy, and a folder that does not exist: the folder first.
    let missing = try await run(
      Harness.ferryBinary, ["receive", "--dir", "/nonexistent/ferry-inbox"],
      environment: TestEnvironment.withoutBus())
    #expect(missing.status == 2, "\(missing.stderr)")
    #expect(missing.stderr.contains("does not exist"), "\(missing.stderr)")
    #expect(!missing.stderr.contains("no terminal"), "\(missing.stderr)")
  }

  @Test("the receive banner says whom it accepts without asking: --yes is everyone, loudly")
  func bannerSaysWhom() async throws {
    for (flags, words) in [
      (["--yes"], "Accepting EVERY sender without asking (--yes)"),
      (
        ["--accept-from", String(repeating: "AB", count: 32), "--accept-trusted"],
        "Accepting 1 chosen key and peers marked with 'ferry trust' without asking; others are declined"
      ),
    ] {
      let receiver = try ChildProcess.ferry(
        ["receive", "--dir", try temporaryDirectory("banner").path, "--port", "0"] + flags,
        environment: TestEnvironment.withoutBus())
      defer { receiver.signal(SIGKILL) }
      // On stderr, as the docs say of every message for people.
      let banner = await receiver.waitForLine(onStderr: true) { $0.contains("Press Ctrl-C") }
      #expect(banner?.text.contains(words) == true, "\(receiver.stderr)")
      #expect(!receiver.stdout.contains("Press Ctrl-C"), "\(receiver.stdout)")
    }
  }
}

/// `ferry trust FPR --name NICKNAME`, then `send --to NICKNAME`: found by its key through real
/// discovery, whatever name it advertises.
@Suite(
  "ferry send --to a trusted peer's nickname", .timeLimit(.minutes(2)), .needsLocalAvahi,
  .endsItsProcesses)
struct CLINicknameTests {
  @Test(
    "trust --name 'Office box', then send --to 'office box' reaches the key advertising 'alice-laptop'"
  )
  func sendToNickname() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("nickname-dst")
    let receiver = try ChildProcess.ferry(
      [
        "receive", "-j", "--yes", "--once", "--dir", destination.path, "--service", type,
        "--name", "alice-laptop",
      ],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    defer { receiver.signal(SIGKILL) }
    let advertising = await receiver.waitForLine {
      jsonObject($0)?["event"] as? String == "advertising"
    }
    let fingerprint = try #require(
      advertising.flatMap { jsonObject($0.text)?["fingerprint"] as? String }, "\(receiver.stderr)")
    let home = Harness.freshFerryHome()
    let trusted = try await run(
      Harness.ferryBinary, ["trust", fingerprint, "--name", "Office box"],
      environment: ["FERRY_HOME": home])
    #expect(trusted.status == 0, "\(trusted.stderr)")
    let file = try temporaryDirectory("nickname-src").appendingPathComponent("notes.txt")
    try writeFile(file, size: 5000, seed: 9)
    let sent = try await run(
      Harness.ferryBinary,
      ["send", "--to", "office box", "--service", type, "--timeout", "60", file.path],
      environment: ["FERRY_HOME": home], timeout: .seconds(90))
    #expect(sent.status == 0, "\(sent.stderr)")
    #expect(
      try sha256(of: destination.appendingPathComponent("notes.txt")) == sha256(of: file))
    // The nickname stays after the contact; peers shows it.
    let peers = try await run(Harness.ferryBinary, ["peers"], environment: ["FERRY_HOME": home])
    #expect(peers.stdout.contains("Office box"), "\(peers.stdout)")
  }
}
