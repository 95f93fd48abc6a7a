import Foundation
import Testing

/// The `Accept? [y/N]` prompt of `ferry receive` as a person meets it on a terminal (a
/// pseudo-terminal here): keys typed before a question are not glued onto its answer, an
/// answer that is neither yes nor no is asked again, and a question that comes during a
/// transfer stays below the progress bars, lists the questions waiting behind it, survives
/// the transfer's end and can be answered. Loopback, --address, no avahi-daemon.
@Suite("ferry receive's prompt, typed at", .timeLimit(.minutes(3)), .endsItsProcesses)
struct CLIPromptInputTests {

  /// A prompting receiver on a pseudo-terminal, and its port.
  func receiver(_ label: String) async throws -> (ChildProcess, URL, UInt16) {
    let destination = try temporaryDirectory("\(label)-dst")
    let receiver = try await ReceiverProcess.start(
      ["--dir", destination.path, "--name", "desk"], bus: .none, terminal: true, columns: 100)
    return (receiver.process, destination, try #require(UInt16(exactly: receiver.port)))
  }

  /// `ferry send --json` of `files` to 127.0.0.1:`port`, waiting `timeout` seconds for an answer.
  func send(_ files: [URL], port: UInt16, name: String = "laptop", timeout: Int = 60) throws
    -> ChildProcess
  {
    try ChildProcess.ferry(
      [
        "send", "--json", "--retry-for", "0", "--name", name, "--timeout", "\(timeout)",
        "--address", "127.0.0.1:\(port)",
      ] + files.map(\.path),
      environment: TestEnvironment.withoutBus())
  }

  func smallFile(_ label: String) throws -> URL {
    let file = try temporaryDirectory(label).appendingPathComponent("\(label).txt")
    try writeFile(file, size: 1000, seed: 7)
    return file
  }

  /// How many questions were asked: each prints its header once.
  func questions(_ receiver: ChildProcess) -> Int {
    receiver.transcript.components(separatedBy: "wants to send").count - 1
  }

  @Test("Ctrl-C at the prompt: the sender hears 'the receiver stopped' and exits 4")
  func interruptedAtPrompt() async throws {
    let (receiver, _, port) = try await receiver("stopped")
    defer { receiver.signal(SIGKILL) }
    let sender = try send([try smallFile("stopped")], port: port)
    defer { sender.signal(SIGKILL) }
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    receiver.signal(SIGINT)
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 130, "\(receiver.transcript)")
    #expect(await sender.waitForExit(timeout: Harness.patience) == 4, "\(sender.stderr)")
    #expect(sender.stderr.contains("the receiver stopped"), "\(sender.stderr)")
    #expect(!sender.stderr.contains("vanished"), "\(sender.stderr)")
  }

  @Test("keys typed while nothing is asked are discarded: 'x' then the question, 'y' accepts")
  func typeaheadDiscarded() async throws {
    let (receiver, destination, port) = try await receiver("typeahead")
    defer { receiver.signal(SIGKILL) }
    receiver.type("x\u{0C}")  // a stray key and a Ctrl-L, no Enter
    // Echoed by the terminal: the keys are in its input queue before the question comes.
    #expect(await receiver.waitForText("x^L"), "\(receiver.transcript)")
    let file = try smallFile("typeahead")
    let sender = try send([file], port: port)
    defer { sender.signal(SIGKILL) }
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    receiver.type("y\n")
    #expect(await sender.waitForExit() == 0, "\(sender.stderr)\n\(receiver.transcript)")
    #expect(
      try sha256(of: destination.appendingPathComponent(file.lastPathComponent)) == sha256(of: file)
    )
  }

  @Test("an answer that is neither yes nor no is asked again; then 'yes' accepts")
  func badAnswerAskedAgain() async throws {
    let (receiver, _, port) = try await receiver("reask")
    defer { receiver.signal(SIGKILL) }
    let sender = try send([try smallFile("reask")], port: port)
    defer { sender.signal(SIGKILL) }
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    receiver.type("maybe\n")
    #expect(await receiver.waitForText("Please answer y (yes) or n (no)"), "\(receiver.transcript)")
    #expect(sender.isRunning, "an unclear answer is not a no")
    receiver.type("YES\n")
    #expect(await sender.waitForExit() == 0, "\(sender.stderr)\n\(receiver.transcript)")
    #expect(questions(receiver) == 1)
  }

  @Test(
    "a question during a transfer stays below the bars, lists who waits, outlives the transfer, and is answered"
  )
  func questionDuringTransfer() async throws {
    let (receiver, destination, port) = try await receiver("during")
    defer { receiver.signal(SIGKILL) }
    let proxy = CuttableProxy(to: port)
    defer { proxy.stop() }
    // A: 1 GiB (allocated, never written) through a proxy that will hold it still for a moment.
    let big = try temporaryDirectory("during-big").appendingPathComponent("big.iso")
    try writeAllocated(big, size: Int(1 << 30))
    let first = try send([big], port: proxy.port, name: "first")
    defer { first.signal(SIGKILL) }
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    receiver.type("y\n")
    let moving = await first.waitForLine(timeout: Harness.patience) {
      $0.contains("\"progress\"") && (jsonObject($0)?["bytes"] as? Int ?? 0) > 1 << 20
    }
    try #require(moving != nil, "no progress: \(first.stdout) \(first.stderr)")
    proxy.stall(true)
    // Held still, but never silent for long: a link that hears nothing for 7 s is dead on
    // both ends, so a moment every 2 s lets the PINGs (and a little of A) through.
    let pulses = Task {
      while !Task.isCancelled {
        try? await Task.sleep(for: .seconds(2))
        proxy.stall(false)
        try? await Task.sleep(for: .milliseconds(200))
        proxy.stall(true)
      }
    }
    // B asks while A's bar is up; C waits its turn behind B. Both wait for their answer as
    // long as an invitation may (120 s): the stall lasts what a loaded machine makes it.
    let second = try send([try smallFile("second")], port: port, name: "second", timeout: 120)
    defer { second.signal(SIGKILL) }
    try await waitUntil(timeout: Harness.patience) { questions(receiver) == 2 }
    let third = try send([try smallFile("third")], port: port, name: "third", timeout: 120)
    defer { third.signal(SIGKILL) }
    #expect(
      await receiver.waitForText("Also waiting to ask: third (", timeout: Harness.patience),
      "\(receiver.transcript)")
    pulses.cancel()
    await pulses.value
    // Where it stood, in bytes: a count of Characters shifts when what comes next joins the
    // last one (a "\r" and the "\n" after it are one Character).
    let beforeResume = receiver.transcript.utf8.count
    proxy.stall(false)
    // A finishes while B's question is up: the note goes above, the question is drawn again.
    // A's rest takes what a loaded machine makes it; it reports progress meanwhile.
    #expect(await first.waitForExit(quietFor: Harness.patience) == 0, "\(first.stderr)")
    func redrawn() -> Bool {
      let after = String(decoding: receiver.transcript.utf8.dropFirst(beforeResume), as: UTF8.self)
      guard let received = after.range(of: "Received 1 file,") else { return false }
      return after[received.upperBound...].contains("Accept? [y/N]")
    }
    // The note and the redrawn question reach the terminal after A's sender exits, maybe.
    try await waitUntil(timeout: Harness.patience) { redrawn() }
    #expect(redrawn(), "the question is gone after the transfer: \(receiver.transcript)")
    receiver.type("y\n")
    #expect(await second.waitForExit() == 0, "\(second.stderr)\n\(receiver.transcript)")
    try await waitUntil(timeout: Harness.patience) { questions(receiver) == 3 }
    // Typed once C's prompt shows: what is typed before it is discarded.
    #expect(await receiver.waitForQuestion(after: "wants to send"), "\(receiver.transcript)")
    receiver.type("n\n")
    #expect(await third.waitForExit() == 4, "\(third.stderr)")
    #expect(
      FileManager.default.fileExists(atPath: destination.appendingPathComponent("second.txt").path))
    #expect(
      !FileManager.default.fileExists(atPath: destination.appendingPathComponent("third.txt").path))
  }
}
