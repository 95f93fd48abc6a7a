import Ferry
import Foundation
import Testing

/// A batch of more files than one offer carries goes as consecutive offers, with one prompt
/// and one progress total. The parts are made small here (`FERRY_TEST_PART_FILES`) so that a
/// few dozen files take the same path a million do.
@Suite(
  "ferry send of a batch in several offers", .timeLimit(.minutes(3)), .needsLocalAvahi,
  .endsItsProcesses)
struct CLIBatchPartsTests {
  static let partEnvironment = ["FERRY_TEST_PART_FILES": "10"]

  /// 25 files (three parts of at most 10) in two folders, one of them hidden, and an empty
  /// folder that is not sent.
  static func makeTree(_ label: String) throws -> URL {
    let source = try temporaryDirectory(label)
    let folder = source.appendingPathComponent("tree")
    for index in 0..<25 {
      let sub = index < 5 ? ".config" : "d\(index % 3)"
      try writeFile(
        folder.appendingPathComponent("\(sub)/f\(index).dat"), size: index * 101,
        seed: UInt64(index))
    }
    return folder
  }

  @Test("--yes --once takes every part: both exit 0, one progress total, trees identical")
  func once() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("parts-dst")
    let folder = try Self.makeTree("parts-src")
    let receiver = try await ReceiverProcess.start(
      [
        "--yes", "--once", "--json", "--dir", destination.path, "--service", type, "--name",
        "inbox",
      ], bus: .harness
    ).process
    let sender = try ChildProcess.ferry(
      ["send", "--json", "--to", "inbox", "--service", type, folder.path],
      environment: Self.partEnvironment.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
        $1
      })
    // As long as the transfer takes on a loaded machine, while the sender reports progress.
    #expect(await sender.waitForExit(quietFor: Harness.patience) == 0, "\(sender.stderr)")
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 0, "\(receiver.stderr)")

    let sent = sender.stdoutLines.compactMap { jsonObject($0.text) }
    #expect(sent.filter { $0["event"] as? String == "file-done" }.count == 25)
    let progress = sent.filter { $0["event"] as? String == "progress" }
    #expect(!progress.isEmpty)
    #expect(progress.allSatisfy { $0["files"] as? Int == 25 }, "one total: \(progress)")
    let doneFiles = progress.compactMap { $0["files_done"] as? Int }
    #expect(doneFiles == doneFiles.sorted(), "the total only grows: \(doneFiles)")
    #expect(sent.last?["event"] as? String == "done")
    #expect(sent.last?["stored"] as? Int == 25)
    let received = receiver.stdoutLines.compactMap { jsonObject($0.text) }
    #expect(received.filter { $0["event"] as? String == "offer" }.count == 3)
    #expect(received.filter { $0["event"] as? String == "file-done" }.count == 25)
    #expect(try tree(destination.appendingPathComponent("tree")) == tree(folder))
  }

  @Test("one 'y' at the terminal covers every part; the prompt told the whole batch")
  func oneQuestion() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("parts-ask-dst")
    let folder = try Self.makeTree("parts-ask-src")
    let receiver = try await ReceiverProcess.start(
      ["--dir", destination.path, "--service", type, "--name", "asker"], bus: .harness,
      terminal: true
    ).process
    defer { receiver.signal(SIGKILL) }
    let sender = try ChildProcess.ferry(
      ["send", "--json", "--to", "asker", "--service", type, folder.path],
      environment: Self.partEnvironment.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
        $1
      })
    #expect(await receiver.waitForText("Accept? [y/N]"), "\(receiver.transcript)")
    #expect(receiver.transcript.contains("25 files"), "\(receiver.transcript)")
    receiver.type("y\n")
    // As long as the transfer takes on a loaded machine, while the sender reports progress.
    #expect(await sender.waitForExit(quietFor: Harness.patience) == 0, "\(sender.stderr)")
    #expect(try tree(destination.appendingPathComponent("tree")) == tree(folder))
    // Asked once: each question prints its code once (the prompt line itself is redrawn).
    let questions = receiver.transcript.components(separatedBy: "Verification code:").count - 1
    #expect(questions == 1, "\(receiver.transcript)")
    #expect(receiver.isRunning)
  }

}
