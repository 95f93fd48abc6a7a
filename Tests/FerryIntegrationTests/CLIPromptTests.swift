import Ferry
import Foundation
import Testing

/// `ferry receive` at a terminal: the prompt is answered through a pseudo-terminal, as a person
/// would answer it.
@Suite(
  "ferry receive prompts on a terminal", .timeLimit(.minutes(3)), .needsLocalAvahi,
  .endsItsProcesses)
struct CLIPromptTests {
  /// A receiver on a pseudo-terminal, with the files a sender will offer it.
  struct Scene {
    let type = Harness.uniqueServiceType()
    let name = "desk \(Int.random(in: 1000...9999))"
    let destination: URL
    let files: [URL]
    let receiver: ChildProcess

    init() async throws {
      destination = try temporaryDirectory("prompt-dst")
      let source = try temporaryDirectory("prompt-src")
      files = [source.appendingPathComponent("report.pdf"), source.appendingPathComponent("b.txt")]
      try writeFile(files[0], size: 300_000, seed: 1)
      try writeFile(files[1], size: 12, seed: 2)
      receiver = try await ReceiverProcess.start(
        ["--dir", destination.path, "--service", type, "--name", name], bus: .harness,
        terminal: true
      ).process
    }

    /// `ferry send --json` of the files to the receiver by name, with `--timeout` for finding
    /// it and its answer together: by default the whole of a test's patience.
    func send(timeout: Int = 60) throws -> ChildProcess {
      try ChildProcess.ferry(
        ["send", "--json", "--to", name, "--service", type, "--timeout", "\(timeout)"]
          + files.map(\.path),
        environment: ["FERRY_HOME": Harness.freshFerryHome()])
    }

    var received: [String] {
      ((try? FileManager.default.contentsOfDirectory(atPath: destination.path)) ?? [])
        .filter { $0 != ".ferry-partial" }
    }
  }

  @Test("the prompt shows who, what and the code; 'y' receives the files and send exits 0")
  func yes() async throws {
    let scene = try await Scene()
    defer { scene.receiver.signal(SIGKILL) }
    let sender = try scene.send()
    #expect(await scene.receiver.waitForText("Accept? [y/N]"), "\(scene.receiver.transcript)")
    let invited = await sender.waitForLine { jsonObject($0)?["event"] as? String == "invited" }
    let code = try #require(invited.flatMap { jsonObject($0.text)?["code"] as? String })
    let prompt = scene.receiver.transcript
    #expect(prompt.contains("wants to send"))
    #expect(prompt.contains("(new)"))
    #expect(prompt.contains("2 files, 300 KB"))
    #expect(prompt.contains("report.pdf"))
    // The code is shown as "123 456"; the JSON carries the digits.
    #expect(prompt.contains("Verification code: \(code.prefix(3)) \(code.suffix(3))"), "\(prompt)")

    scene.receiver.type("y\n")
    #expect(await sender.waitForExit() == 0, "\(sender.stderr)")
    for file in scene.files {
      #expect(
        try sha256(of: scene.destination.appendingPathComponent(file.lastPathComponent))
          == sha256(of: file))
    }
    #expect(await scene.receiver.waitForText("Saved "), "\(scene.receiver.transcript)")
    #expect(scene.receiver.isRunning, "without --once, receive keeps receiving")
  }

  @Test("'n' declines: send exits 4 and nothing is written")
  func no() async throws {
    let scene = try await Scene()
    defer { scene.receiver.signal(SIGKILL) }
    let sender = try scene.send()
    #expect(await scene.receiver.waitForText("Accept? [y/N]"), "\(scene.receiver.transcript)")
    scene.receiver.type("n\n")
    #expect(await sender.waitForExit() == 4, "\(sender.stderr)")
    #expect(sender.stderr.contains("declined"))
    #expect(scene.received.isEmpty, "\(scene.received)")
    // The receiver asks again for the next sender.
    let again = try scene.send()
    defer { again.signal(SIGKILL) }
    #expect(await scene.receiver.waitForText("Declined"))
    let prompts = { scene.receiver.transcript.components(separatedBy: "wants to send").count - 1 }
    try await waitUntil { prompts() >= 2 }
    #expect(prompts() == 2, "\(scene.receiver.transcript)")
  }

  @Test("no answer: the receiver declines just before the invitation expires; send exits 4")
  func silence() async throws {
    let scene = try await Scene()
    defer { scene.receiver.signal(SIGKILL) }
    let started = ContinuousClock.now
    // 10 s for finding the receiver and its answer: the finding must not eat the invitation
    // on a loaded machine.
    let sender = try scene.send(timeout: 10)
    #expect(await scene.receiver.waitForText("Accept? [y/N]"), "\(scene.receiver.transcript)")
    #expect(await sender.waitForExit() == 4, "\(sender.stderr)")
    let waited = ContinuousClock.now - started
    // The receiver answers "no" a moment (1 s) before the 10 s the invitation lasts: not
    // before 8 s, and not later than the 10 s and the margin for a loaded machine.
    #expect(waited >= .seconds(8) && waited < .seconds(10) + Harness.margin, "took \(waited)")
    #expect(sender.stderr.contains("no answer"), "\(sender.stderr)")
    // The receiver's line may reach its terminal a moment after the sender has its answer.
    #expect(
      await scene.receiver.waitForText("no answer in time: declined"),
      "\(scene.receiver.transcript)")
    #expect(scene.received.isEmpty)
  }

  @Test("the sender gives up (Ctrl-C) while the prompt asks: the prompt says so and stops asking")
  func withdrawn() async throws {
    let scene = try await Scene()
    defer { scene.receiver.signal(SIGKILL) }
    let sender = try scene.send()
    #expect(await scene.receiver.waitForText("Accept? [y/N]"), "\(scene.receiver.transcript)")
    sender.signal(SIGINT)
    #expect(await sender.waitForExit() == 130, "\(sender.stderr)")
    let started = ContinuousClock.now
    // At once: within the margin for a loaded machine.
    #expect(
      await scene.receiver.waitForText("withdrew the invitation", timeout: Harness.margin),
      "\(scene.receiver.transcript)")
    #expect(ContinuousClock.now - started < Harness.margin)
    // A 'y' typed now answers nothing, and the next sender is asked afresh.
    scene.receiver.type("y\n")
    let again = try scene.send()
    defer { again.signal(SIGKILL) }
    let prompts = { scene.receiver.transcript.components(separatedBy: "wants to send").count - 1 }
    try await waitUntil { prompts() >= 2 }
    #expect(prompts() == 2, "\(scene.receiver.transcript)")
    // By the next question, the stray 'y' has been read, or discarded: it accepted nothing.
    #expect(
      !scene.receiver.transcript.contains("Could not accept"), "\(scene.receiver.transcript)")
    // Typed once the prompt shows: what is typed before it is discarded.
    #expect(
      await scene.receiver.waitForQuestion(after: "wants to send"), "\(scene.receiver.transcript)")
    scene.receiver.type("y\n")
    #expect(await again.waitForExit() == 0, "\(again.stderr)")
    #expect(scene.received.count == 2)
  }

  @Test("a second sender that gives up while the first is being asked is not asked about later")
  func queuedAndWithdrawn() async throws {
    let scene = try await Scene()
    defer { scene.receiver.signal(SIGKILL) }
    let first = try scene.send()
    defer { first.signal(SIGKILL) }
    #expect(await scene.receiver.waitForText("Accept? [y/N]"), "\(scene.receiver.transcript)")
    // The second gives up (its --timeout ends) while queued behind the first's question.
    let second = try scene.send(timeout: 10)
    #expect(
      await scene.receiver.waitForText("Also waiting to ask:"), "\(scene.receiver.transcript)")
    #expect(await second.waitForExit() == 3, "\(second.stderr)")
    scene.receiver.type("n\n")
    #expect(await first.waitForExit() == 4, "\(first.stderr)")
    // Withdrawn before its turn, it left the queue: the next question is a third sender's,
    // not the second's (its code is the one shown), and only two were asked.
    let third = try scene.send()
    defer { third.signal(SIGKILL) }
    let code = try #require(
      await third.waitForEvent("invited")?["code"] as? String, "\(third.stderr)")
    #expect(
      await scene.receiver.waitForText("Verification code: \(code.prefix(3)) \(code.suffix(3))"),
      "\(scene.receiver.transcript)")
    let prompts = scene.receiver.transcript.components(separatedBy: "wants to send").count - 1
    #expect(prompts == 2, "\(scene.receiver.transcript)")
  }
}
