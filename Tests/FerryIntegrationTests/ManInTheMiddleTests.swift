import Ferry
import Foundation
import Testing

/// A man in the middle that relays two TLS sessions (Tests/Hostile/hostile_peer.py `relay`,
/// its own key toward each end) between a real `ferry send --address` and a real
/// `ferry receive` on a pseudo-terminal. It forwards both ends' nonces unchanged, the best it
/// can do (docs/SECURITY.md, "The verification code"): the two screens still show different
/// codes, because each code hashes its own TLS session's exporter.
@Suite(
  "A man in the middle relaying two TLS sessions", .timeLimit(.minutes(3)), .serialized,
  .needsHostileRun, .endsItsProcesses)
struct ManInTheMiddleTests {
  @Test(
    "a relaying man in the middle: the two screens show different codes in every run, each its own session's; the code changes from one connection to the next; the sender shows it before the receiver declines"
  )
  func relayedCodesDiffer() async throws {
    let receiver = try await AttackedReceiver.start([], terminal: true)
    defer { receiver.process.signal(SIGKILL) }
    let senderHome = Harness.freshFerryHome()
    let identity = try await run(
      Harness.ferryBinary, ["identity", "--json"], environment: ["FERRY_HOME": senderHome])
    let senderKey = try #require(
      jsonObject(identity.stdout.trimmingCharacters(in: .newlines))?["fingerprint"] as? String)
    let runs = 4
    let relay = try await HostilePeer.relay(
      target: receiver.port, senderKey: senderKey, connections: runs)
    defer { relay.process.signal(SIGKILL) }
    let folder = try temporaryDirectory("mitm-source")
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("note.txt")
    try Data("for the receiver's eyes only\n".utf8).write(to: file)

    var senderCodes: [String] = []
    var receiverCodes: [String] = []
    for attempt in 1...runs {
      let sender = try ChildProcess.ferry(
        ["send", "--json", "--address", "127.0.0.1:\(relay.port)", file.path],
        environment: ["FERRY_HOME": senderHome])
      defer { sender.signal(SIGKILL) }
      try #require(await receiver.waitForPrompts(attempt), "\(receiver.process.transcript)")
      // The sender showed its code as soon as the receiver was asked, before any answer.
      let invited = await sender.waitForLine { jsonObject($0)?["event"] as? String == "invited" }
      let senderCode = try #require(
        invited.flatMap { jsonObject($0.text)?["code"] as? String }, "\(sender.stderr)")
      // Its note goes to stderr, read on a thread of its own: waited for.
      #expect(
        await sender.waitForLine(onStderr: true) { $0.contains("verification code") } != nil,
        "\(sender.stderr)")
      let shown = receiver.process.transcript.components(separatedBy: "Verification code: ")
      let receiverCode = String(shown.last?.prefix(7) ?? "").replacingOccurrences(of: " ", with: "")
      receiver.process.type("n\n")
      #expect(await sender.waitForExit() == 4, "\(sender.stderr)")

      // The relay derives each session's code independently (its TLS exporter from its key log):
      // each screen shows the code of its own session, and they differ.
      let relayed = await relay.process.waitForLine {
        jsonObject($0)?["event"] as? String == "relayed"
          && jsonObject($0)?["attempt"] as? Int == attempt
      }
      let fields = try #require(relayed.flatMap { jsonObject($0.text) }, "\(relay.process.stderr)")
      #expect(fields["sender_code"] as? String == senderCode, "\(fields)")
      #expect(fields["receiver_code"] as? String == receiverCode, "\(fields)")
      #expect(senderCode != receiverCode, "run \(attempt): both screens show \(senderCode)")
      senderCodes.append(senderCode)
      receiverCodes.append(receiverCode)
    }
    // A new code for every connection, on both ends (four equal draws: p < 10^-5 each).
    #expect(Set(senderCodes).count == runs, "\(senderCodes)")
    #expect(Set(receiverCodes).count == runs, "\(receiverCodes)")
    #expect(receiver.received.isEmpty, "\(receiver.received)")
    #expect(receiver.outside.isEmpty, "\(receiver.outside)")
  }
}
