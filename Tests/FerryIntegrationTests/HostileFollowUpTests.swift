import Ferry
import Foundation
import Testing

/// Attacks found by the review of the hostile-peer work, each against the real thing: a prompt
/// blocked while invitations come and go, a summary that hides a file behind "… and N more",
/// and peers that keep their link alive and do nothing once an offer is accepted.
@Suite(
  "Hostile peers: queued invitations, hidden files, stalls", .timeLimit(.minutes(3)), .serialized,
  .needsHostileRun, .endsItsProcesses)
struct HostileFollowUpTests {
  @Test("invitations withdrawn while a prompt is open leave nothing queued: memory stays flat")
  func withdrawnInvitations() async throws {
    let receiver = try await AttackedReceiver.start([], terminal: true)
    defer { receiver.process.signal(SIGKILL) }
    // One invitation holds the prompt; nobody answers it meanwhile. It lasts 120 s (the most
    // an invitation may), so that it outlasts the 600 withdrawals on a loaded machine.
    let holder = Task {
      try await HostilePeer.attack(
        port: receiver.port, "consent", ["--wait", "170", "--timeout-ms", "120000"],
        timeout: .seconds(175))
    }
    #expect(await receiver.waitForPrompts(1), "\(receiver.process.transcript)")
    _ = try await HostilePeer.attack(
      port: receiver.port, "withdraw", ["--count", "300"], timeout: .seconds(120))
    print("after 300 withdrawn: \(receiver.residentMemoryKiB) KiB")
    let warm = receiver.residentMemoryKiB
    let results = try await HostilePeer.attack(
      port: receiver.port, "withdraw", ["--count", "300"], timeout: .seconds(120))
    let growth = receiver.residentMemoryKiB - warm
    print("300 invitations of 60 KiB withdrawn behind a prompt: receive grew by \(growth) KiB")
    #expect(results.last?["count"] as? Int == 300, "\(results)")
    // Queued, they would hold 300 × 60 KiB = 18 MiB.
    #expect(growth < 6 << 10, "grew by \(growth) KiB")
    receiver.process.type("n\n")
    _ = try await holder.value
    // None of them is asked about afterwards: they were withdrawn before anyone took them.
    try await Task.sleep(for: .milliseconds(500))
    #expect(
      receiver.process.transcript.components(separatedBy: "Verification code:").count - 1 == 1,
      "\(receiver.process.transcript)")
    #expect(receiver.process.isRunning)
  }

  @Test(
    "an offer with a file the summary hid (a hidden path, names left out) is asked about again",
    arguments: ["hidden", "short"])
  func hiddenFiles(variant: String) async throws {
    let receiver = try await AttackedReceiver.start([], terminal: true)
    defer { receiver.process.signal(SIGKILL) }
    let attack = Task {
      try await HostilePeer.attack(port: receiver.port, "hidden", ["--variant", variant])
    }
    #expect(await receiver.waitForPrompts(1), "\(receiver.process.transcript)")
    receiver.process.type("y\n")
    #expect(
      await receiver.process.waitForQuestion(after: "offers other files than it announced"),
      "\(variant): \(receiver.process.transcript)")
    #expect(
      receiver.process.transcript.contains("including 1 hidden file "),
      "\(variant): \(receiver.process.transcript)")
    receiver.process.type("n\n")
    let results = try await attack.value
    let offer = try #require(results.first { $0["event"] as? String == "offer" }, "\(results)")
    #expect(offer["frame"] as? String == "RESET", "\(variant): \(results)")
    #expect(receiver.received.isEmpty, "\(variant): \(receiver.received)")
  }

  @Test("a sender that stops sending after its offer is accepted is cut off; the receiver goes on")
  func stalledSender() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("stall-dest")
    let peer = try ChildProcess(
      Harness.testPeerBinary, ["receive", "stalled", type, destination.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome(), "FERRY_TEST_STALL_SECONDS": "3"])
    defer { peer.signal(SIGKILL) }
    let listening = try #require(
      await peer.waitForLine { $0.contains("\"listening\"") }.flatMap { jsonObject($0.text) },
      "\(peer.stderr)")
    let results = try await HostilePeer.attack(
      port: try #require(listening["port"] as? Int), "stall",
      ["--size", "\(1 << 20)", "--seconds", "30"])
    let ended = try #require(results.first { $0["event"] as? String == "ended" }, "\(results)")
    #expect(ended["frame"] as? String == "RESET", "\(results)")
    #expect((ended["reason"] as? String)?.contains("no progress for 3 s") == true, "\(results)")
    // FERRY_TEST_STALL_SECONDS: the 3 s stall limit, plus what a loaded machine adds.
    #expect((ended["after"] as? Double ?? 99) < 3 + seconds(Harness.margin), "\(results)")
    let received = await peer.waitForLine { $0.contains("\"received\"") }
    #expect(received?.text.contains("no progress") == true, "\(peer.stdout)")
  }

  @Test("a receiver that accepts and then acknowledges nothing is given up on; the sender exits")
  func stalledReceiver() async throws {
    let (hostile, port, fingerprint) = try await HostilePeer.serve(
      "stall", ["--seconds", "30", "--hold", "1"])
    defer { hostile.signal(SIGKILL) }
    // More than the offer's first window: the sender waits for credit that never comes.
    let file = try temporaryDirectory("stall-src").appendingPathComponent("big.bin")
    try writeFile(file, size: 12 << 20)
    let sender = try ChildProcess(
      Harness.testPeerBinary, ["send", "127.0.0.1", "\(port)", fingerprint, file.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome(), "FERRY_TEST_STALL_SECONDS": "3"])
    defer { sender.signal(SIGKILL) }
    let failed = await sender.waitForLine { $0.contains("\"error\"") }
    #expect(failed?.text.contains("no progress for 3 s") == true, "\(sender.stdout)")
    let reset = await hostile.waitForLine { $0.contains("\"reset\"") }
    #expect(
      reset?.text.contains("the sender saw no progress") == true, "\(hostile.stdout)")
  }

  @Test(
    "a silent sender with a held file loses the offer once the receiver hashed its own copy",
    .enabled(
      if: Harness.keepsUserAttributes,
      "the temporary folder's filesystem keeps no user extended attributes"))
  func silentSenderWithHeldFile() async throws {
    let type = Harness.uniqueServiceType()
    let destination = try temporaryDirectory("held-stall-dest")
    let peer = try ChildProcess(
      Harness.testPeerBinary, ["receive", "held-stall", type, destination.path],
      environment: [
        "FERRY_HOME": Harness.freshFerryHome(), "FERRY_TEST_STALL_SECONDS": "3",
        "FERRY_TEST_OFFERS": "2",
      ])
    defer { peer.signal(SIGKILL) }
    let listening = try #require(
      await peer.waitForLine { $0.contains("\"listening\"") }.flatMap { jsonObject($0.text) },
      "\(peer.stderr)")
    // 128 MiB held: the receiver used to wait 3 s + 12.8 s for its digest.
    let results = try await HostilePeer.attack(
      port: try #require(listening["port"] as? Int), "held-stall",
      [
        "--size", "\(128 << 20)", "--sizes", "\(64 << 20)", "--seconds",
        "40",
      ])
    let offer = try #require(results.first { $0["event"] as? String == "offer" }, "\(results)")
    #expect(offer["held"] as? [Int] == [0], "\(results)")
    let ended = try #require(results.first { $0["event"] as? String == "ended" }, "\(results)")
    #expect(ended["frame"] as? String == "RESET", "\(results)")
    #expect((ended["reason"] as? String)?.contains("no progress for 3 s") == true, "\(results)")
    // FERRY_TEST_STALL_SECONDS: the 3 s stall limit, plus what a loaded machine adds.
    #expect((ended["after"] as? Double ?? 99) < 3 + seconds(Harness.margin), "\(results)")
  }

  @Test(
    "a receiver that calls every file held and never answers is given up on in time")
  func receiverThatHoldsEverything() async throws {
    let (hostile, port, fingerprint) = try await HostilePeer.serve(
      "held", ["--seconds", "40", "--hold", "1"])
    defer { hostile.signal(SIGKILL) }
    // 128 MiB: the sender used to wait 3 s + 12.8 s for the answer.
    let file = try temporaryDirectory("held-src").appendingPathComponent("big.bin")
    try writeAllocated(file, size: 128 << 20)
    let sender = try ChildProcess(
      Harness.testPeerBinary, ["send", "127.0.0.1", "\(port)", fingerprint, file.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome(), "FERRY_TEST_STALL_SECONDS": "3"])
    defer { sender.signal(SIGKILL) }
    let failed = await sender.waitForLine { $0.contains("\"error\"") }
    #expect(failed?.text.contains("no progress for 3 s") == true, "\(sender.stdout)")
    let reset = await hostile.waitForLine { $0.contains("\"reset\"") }
    let after = reset.flatMap { jsonObject($0.text)?["after"] as? Double } ?? 99
    // FERRY_TEST_STALL_SECONDS: the 3 s stall limit, plus what a loaded machine adds.
    #expect(after < 3 + seconds(Harness.margin), "\(hostile.stdout)")
  }
}
