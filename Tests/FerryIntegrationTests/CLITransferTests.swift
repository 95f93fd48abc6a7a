import Ferry
import Foundation
import Testing

/// `ferry send` and `ferry receive` moving real files, driven as processes.
@Suite("ferry send and receive", .timeLimit(.minutes(3)), .needsLocalAvahi, .endsItsProcesses)
struct CLITransferTests {
  @Test(
    "batch: receive --yes --once --json and send --json of 500 files; both exit 0, every hash matches"
  )
  func batch() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("cli-dst")
    let source = try temporaryDirectory("cli-src")
    let folder = source.appendingPathComponent("batch")
    for index in 0..<500 {
      try writeFile(
        folder.appendingPathComponent("d\(index % 10)/file\(index).dat"), size: index * 13,
        seed: UInt64(index))
    }
    let receiver = try await ReceiverProcess.start(
      [
        "--yes", "--once", "--json", "--dir", destination.path, "--service", type, "--name",
        "inbox",
      ], bus: .harness
    ).process
    let sender = try ChildProcess.ferry(
      ["send", "--json", "--to", "inbox", "--service", type, folder.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    // As long as the transfer takes on a loaded machine, while the sender reports progress.
    #expect(
      await sender.waitForExit(quietFor: Harness.patience) == 0,
      "\(sender.stderr) \(sender.stdoutLines.last?.text ?? "")")
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 0, "\(receiver.stderr)")

    let sent = sender.stdoutLines.map { jsonObject($0.text) }
    #expect(sent.allSatisfy { $0 != nil && $0?["timestamp"] is String })
    let events = sent.compactMap { $0?["event"] as? String }
    #expect(events.contains("accepted"))
    #expect(events.filter { $0 == "file-done" }.count == 500)
    #expect(sent.last??["event"] as? String == "done")
    #expect(sent.last??["stored"] as? Int == 500)
    let received = receiver.stdoutLines.compactMap { jsonObject($0.text) }
    #expect(received.filter { $0["event"] as? String == "file-done" }.count == 500)
    #expect(received.last?["event"] as? String == "done")
    #expect(try tree(destination.appendingPathComponent("batch")) == tree(folder))
  }

  @Test("on a narrow terminal the progress bars are cut to its width, so redraws stay in place")
  func narrowTerminal() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("narrow-dst")
    let source = try temporaryDirectory("narrow-src")
    let folder = source.appendingPathComponent("a folder with a rather long name")
    try writeFile(folder.appendingPathComponent("small.txt"), size: 1000)
    let big = folder.appendingPathComponent("a big file with a long name as well.iso")
    try writeAllocated(big, size: Int(400 << 20))  // quick to read, long enough to redraw
    let receiver = try await ReceiverProcess.start(
      [
        "--yes", "--once", "--json", "--dir", destination.path, "--service", type, "--name",
        "narrow",
      ], bus: .harness
    ).process
    defer { receiver.signal(SIGKILL) }
    let columns = 50
    let sender = try ChildProcess.ferry(
      ["send", "--to", "narrow", "--service", type, folder.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()], terminal: true,
      columns: UInt16(columns))
    // As long as the transfer takes on a loaded machine, while the sender redraws its bars.
    #expect(await sender.waitForExit(quietFor: Harness.patience) == 0, "\(sender.transcript)")
    // What the terminal shows between cursor moves, escape sequences removed.
    let shown = sender.transcript.replacing(#/\x1B\[[0-9;]*[A-Za-z]/#, with: "")
      .split(whereSeparator: \.isNewline)  // "\r", "\n" and "\r\n" (one Character)
    let bars = shown.filter { $0.contains("%") && $0.contains("[") }
    #expect(bars.count >= 2, "no progress drawn: \(sender.transcript)")
    for bar in bars {
      #expect(bar.count < columns, "wider than the terminal: \(bar)")
    }
  }

  @Test("--accept-from accepts the listed sender and declines another, whose send exits 4")
  func acceptFrom() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("af-dst")
    let source = try temporaryDirectory("af-src")
    try writeFile(source.appendingPathComponent("note.txt"), size: 100)
    let friendHome = Harness.freshFerryHome()
    let friend = try await run(
      Harness.ferryBinary, ["identity", "--json"], environment: ["FERRY_HOME": friendHome])
    let friendPrint = try #require(
      jsonObject(friend.stdout.trimmingCharacters(in: .newlines))?["fingerprint"] as? String)
    let receiver = try await ReceiverProcess.start(
      [
        "--accept-from", String(friendPrint.prefix(16)), "--json", "--dir", destination.path,
        "--service", type, "--name", "guarded",
      ], bus: .harness
    ).process
    defer { receiver.signal(SIGKILL) }

    let stranger = try await run(
      Harness.ferryBinary,
      [
        "send", "--to", "guarded", "--service", type,
        source.appendingPathComponent("note.txt").path,
      ],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    #expect(stranger.status == 4, "\(stranger.stderr)")
    #expect(stranger.stderr.contains("declined"))
    #expect(
      !FileManager.default.fileExists(atPath: destination.appendingPathComponent("note.txt").path))

    let accepted = try await run(
      Harness.ferryBinary,
      [
        "send", "--to", "guarded", "--service", type,
        source.appendingPathComponent("note.txt").path,
      ],
      environment: ["FERRY_HOME": friendHome])
    #expect(accepted.status == 0, "\(accepted.stderr)")
    #expect(
      try sha256(of: destination.appendingPathComponent("note.txt"))
        == sha256(of: source.appendingPathComponent("note.txt")))
  }

  /// A receiver (`receive --yes --json`) and a sender of a gigabyte (allocated, never written) to it, started and
  /// under way (the receiver has reported progress): a transfer to interrupt.
  func bigTransfer(_ label: String) async throws -> (
    receiver: ChildProcess, sender: ChildProcess, destination: URL
  ) {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("\(label)-dst")
    let big = try temporaryDirectory("\(label)-src").appendingPathComponent("big.iso")
    try writeAllocated(big, size: Int(1 << 30))  // interrupted long before it is all sent
    let receiver = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--service", type, "--name", "sink"],
      bus: .harness
    ).process
    let sender = try ChildProcess.ferry(
      ["send", "--json", "--to", "sink", "--service", type, big.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    let moving = await receiver.waitForLine(timeout: Harness.patience) {
      $0.contains("\"progress\"") && (jsonObject($0)?["bytes"] as? Int ?? 0) > 0
    }
    if moving == nil {
      receiver.signal(SIGKILL)
      sender.signal(SIGKILL)
      Issue.record("no progress: \(receiver.stderr) \(sender.stderr)")
    }
    return (receiver, sender, destination)
  }

  @Test(
    "SIGINT mid-transfer: send exits 130, the receiver reports it cancelled, nothing lands in DEST")
  func interrupt() async throws {
    let (receiver, sender, destination) = try await bigTransfer("int")
    defer { receiver.signal(SIGKILL) }
    sender.signal(SIGINT)
    #expect(await sender.waitForExit() == 130)
    // One command-level failure, the interruption (not also a "transfer failed", exit 1).
    let failures = sender.stdoutLines.compactMap { jsonObject($0.text) }.filter {
      $0["event"] as? String == "error" && $0["exit"] != nil
    }
    #expect(failures.map { $0["code"] as? String } == ["interrupted"], "\(sender.stdout)")
    #expect(failures.first?["exit"] as? Int == 130)
    // It says what to do next: the receiver kept what arrived.
    #expect(
      (failures.first?["message"] as? String)?.contains("run the same send again to resume")
        == true, "\(sender.stdout)")
    let done = await receiver.waitForLine { jsonObject($0)?["event"] as? String == "done" }
    let error = done.flatMap { jsonObject($0.text)?["error"] as? String } ?? ""
    #expect(error.contains("cancel"), "receiver saw: \(error)")
    // The receiver's last progress is what arrived, never the whole (a cancel is not 100 %).
    let last = try #require(
      receiver.stdoutLines.compactMap { jsonObject($0.text) }
        .last { $0["event"] as? String == "progress" })
    let (bytes, total) = (last["bytes"] as? Int ?? 0, last["total"] as? Int ?? 0)
    #expect(bytes < total, "last progress: \(last)")
    let entries = try FileManager.default.contentsOfDirectory(atPath: destination.path)
    #expect(entries.allSatisfy { $0 == ".ferry-partial" }, "\(entries)")
  }

  @Test("SIGINT at the receiver mid-transfer: it exits 130 and the sender hears of a cancel")
  func interruptReceiver() async throws {
    let (receiver, sender, destination) = try await bigTransfer("rint")
    defer { sender.signal(SIGKILL) }
    receiver.signal(SIGINT)
    #expect(await receiver.waitForExit() == 130)
    // The script reading the receiver's events hears how the offer ended.
    let done = receiver.stdoutLines.compactMap { jsonObject($0.text) }
      .filter { $0["event"] as? String == "done" }
    #expect(done.count == 1, "\(receiver.stdout)")
    #expect(done.first?["code"] as? String == "cancelled", "\(receiver.stdout)")
    #expect(receiver.stderr.contains("Stopped receiving from"), "\(receiver.stderr)")
    // ... and `done` is that offer's last word: no file-by-file cancel after it.
    let events = receiver.stdoutLines.compactMap { jsonObject($0.text) }
    let after = events.drop { $0["event"] as? String != "done" }.dropFirst()
    #expect(!after.contains { $0["event"] as? String == "error" }, "\(receiver.stdout)")
    #expect(await sender.waitForExit() == 1, "\(sender.stderr)")
    // The RESET left before the GOODBYE: a cancel, not a receiver that vanished.
    #expect(sender.stderr.contains("cancelled"), "\(sender.stderr)")
    #expect(!sender.stderr.contains("disconnected"), "\(sender.stderr)")
    let entries = try FileManager.default.contentsOfDirectory(atPath: destination.path)
    #expect(entries.allSatisfy { $0 == ".ferry-partial" }, "\(entries)")
  }
}
