import Foundation
import Testing

/// `ferry daemon`'s outbox across namespace hosts, each with its own avahi-daemon: sends
/// queued for a receiver that is not there, delivered when it appears; a daemon killed in the
/// middle of a delivery; a LocalSend device nobody here wrote. The daemon runs on host a.
@Suite(
  "ferry daemon's outbox across namespace hosts", .timeLimit(.minutes(5)), .needsToRunOnHostA,
  .serialized, .endsItsProcesses)
struct DaemonOutboxTests {
  /// Runs a command inside `host`.
  @discardableResult
  func on(_ host: String, _ arguments: [String], mayFail: Bool = false) async throws -> String {
    let result = try await run(Harness.on!, [host] + arguments)
    if !mayFail { #expect(result.status == 0, "\(arguments): \(result.stderr)") }
    return result.stdout
  }

  /// A daemon on host a receiving into a fresh folder as `name`.
  func daemon(_ name: String, extra: [String] = [], home: String = Harness.freshFerryHome())
    async throws -> DaemonProcess
  {
    let config = try DaemonProcess.config(
      destination: try temporaryDirectory("\(name)-in"), name: name, extra: extra)
    return try await DaemonProcess.start(config: config, home: home)
  }

  @Test(
    "a send queued for a host that is off is delivered when it starts 30 s later, and the event stream shows each step"
  )
  func receiverAppearsLater() async throws {
    let daemon = try await daemon("outbox-a")
    defer { daemon.process.signal(SIGKILL) }
    let events = try daemon.events()
    defer { events.signal(SIGKILL) }
    let homeB = Harness.freshFerryHome()
    let keyB = try await DaemonProcess.fingerprint(home: homeB)
    let source = try temporaryDirectory("outbox-src").appendingPathComponent("photos")
    for index in 0..<5 {
      try writeFile(
        source.appendingPathComponent("day\(index % 2)/p\(index).jpg"), size: 300_000 + index,
        seed: UInt64(index))
    }
    let queued = try await daemon.ferry(["send", "--later", "--to", keyB, source.path])
    #expect(queued.status == 0, "\(queued.stderr)")
    let id = queued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(id.count == 16, "\(queued.stdout)")
    #expect(await events.waitForEvent("queued") { $0["send"] as? String == id } != nil)
    // Host b is off for 30 s: the send waits.
    try await Task.sleep(for: .seconds(30))
    let listed = try await daemon.ferry(["outbox", "--json"])
    #expect(listed.stdout.contains("\"state\":\"queued\""), "\(listed.stdout)")
    let destination = try temporaryDirectory("outbox-b")
    let receiver = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", "outbox-b"], bus: .harness,
      on: "b", home: homeB)
    defer { receiver.process.signal(SIGKILL) }
    let ended = try #require(
      await events.waitForEvent("send-ended") { $0["send"] as? String == id },
      "\(events.stdout)\n\(daemon.process.stderr)")
    #expect(ended["state"] as? String == "delivered", "\(ended)")
    #expect(ended["delivered"] as? Int == 5, "\(ended)")
    for index in 0..<5 {
      let path = "photos/day\(index % 2)/p\(index).jpg"
      #expect(
        try sha256(of: destination.appendingPathComponent(path))
          == sha256(of: source.deletingLastPathComponent().appendingPathComponent(path)), "\(path)")
    }
    // Each step, in order, in the stream: queued, the peer seen, the attempt, asked, accepted,
    // each file, done, ended.
    let names = events.events().compactMap { $0["event"] as? String }
    let steps = [
      "queued", "delivering", "peer-found", "invited", "accepted", "file-done", "done",
      "send-ended",
    ]
    var at = names.startIndex
    for step in steps {
      guard let found = names[at...].firstIndex(of: step) else {
        Issue.record("no \(step) after \(names[..<at]): \(names)")
        break
      }
      at = found
    }
    let ids = events.events().compactMap { $0["id"] as? Int }
    #expect(ids == ids.sorted() && Set(ids).count == ids.count, "\(ids)")
    let history = try await daemon.ferry(["status", "--json"])
    #expect(history.stdout.contains("\"queued\":0"), "\(history.stdout)")
  }

  @Test(
    "the daemon SIGKILLed in the middle of a delivery and started again: it resumes from what the receiver staged, and nothing arrives twice"
  )
  func killedMidDelivery() async throws {
    try await on("a", ["tc", "qdisc", "del", "dev", "mdns0", "root"], mayFail: true)
    // The data leaves host a at 200 Mbit: a 150 MB file takes about 6 s.
    try await on(
      "a",
      [
        "tc", "qdisc", "replace", "dev", "mdns0", "root", "tbf", "rate", "200mbit", "burst",
        "256kb", "latency", "100ms",
      ])
    defer {
      Task { try? await on("a", ["tc", "qdisc", "del", "dev", "mdns0", "root"], mayFail: true) }
    }
    let home = Harness.freshFerryHome()
    var daemon = try await daemon("killed-a", home: home)
    defer { daemon.process.signal(SIGKILL) }
    let destination = try temporaryDirectory("killed-b")
    let receiver = try await ReceiverProcess.start(
      [
        "--yes", "--json", "--dir", destination.path, "--name", "killed-b", "--resume-grace", "300",
      ],
      bus: .harness, on: "b")
    defer { receiver.process.signal(SIGKILL) }
    let key = try #require(receiver.fingerprint)
    let file = try temporaryDirectory("killed-src").appendingPathComponent("big.bin")
    let size = 150 << 20
    try writeFile(file, size: size, seed: 42)
    let queued = try await daemon.ferry(["send", "--later", "--to", key, file.path])
    #expect(queued.status == 0, "\(queued.stderr)")
    let id = queued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    let moving = await receiver.process.waitForEvent("progress") {
      ($0["bytes"] as? Int ?? 0) > 40 << 20
    }
    #expect(moving != nil, "\(receiver.process.stdout)\n\(daemon.process.stderr)")
    daemon.process.signal(SIGKILL)
    _ = await daemon.process.waitForExit()
    // Started again as the same user, with the same outbox: the send is queued again, its
    // peer seen, and the receiver resumes it.
    daemon = try await DaemonProcess.start(
      config: daemon.config, home: home, runtime: daemon.runtime)
    let events = try daemon.events()
    defer { events.signal(SIGKILL) }
    let ended = try #require(
      await events.waitForEvent("send-ended", timeout: .seconds(120)) {
        $0["send"] as? String == id
      }, "\(events.stdout)\n\(daemon.process.stderr)")
    #expect(ended["state"] as? String == "delivered", "\(ended)")
    let done = try #require(events.events("done").last, "\(events.stdout)")
    let sent = try #require(done["bytes_sent"] as? Int)
    #expect(sent < size * 3 / 4, "resumed: \(sent) of \(size) sent after the restart")
    #expect(try sha256(of: destination.appendingPathComponent("big.bin")) == sha256(of: file))
    let arrived = try FileManager.default.contentsOfDirectory(atPath: destination.path)
      .filter { !$0.hasPrefix(".") }
    #expect(arrived == ["big.bin"], "\(arrived)")
  }

  @Test(
    "a LocalSend device nobody here wrote (localsend-cli) appears and receives what was queued for its key"
  )
  func localSendDevice() async throws {
    let daemon = try await daemon("outbox-ls", extra: ["localsend = true", "accept = \"trusted\""])
    defer { daemon.process.signal(SIGKILL) }
    let events = try daemon.events()
    defer { events.signal(SIGKILL) }
    let home = NSTemporaryDirectory() + "localsend-cli-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    // Its key: the certificate it makes on its first run, read before it runs.
    let python = [
      "/usr/bin/env", "HOME=\(home)",
      "PYTHONPATH=\(LocalSendTests.ThirdPartyLocalSendTests.installed)",
      "/usr/bin/python3", "-c",
      "from localsend_cli.crypto import get_fingerprint; print(get_fingerprint())",
    ]
    // (It says it made the certificate first: the key is its last line.)
    let key =
      try await run(python[0], Array(python.dropFirst())).stdout
      .split(separator: "\n").last.map(String.init)?.uppercased() ?? ""
    #expect(key.count == 64, "\(key)")
    // Not a text file: localsend-cli shows one text/* file as a message, and saves nothing.
    let file = try temporaryDirectory("ls-src").appendingPathComponent("for-the-phone.bin")
    try writeFile(file, size: 20_000, seed: 9)
    let queued = try await daemon.ferry(["send", "--later", "--localsend", "--to", key, file.path])
    #expect(queued.status == 0, "\(queued.stderr)")
    let id = queued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    // Its announcements go by the default route: one for multicast inside host b, taken away
    // after (as ThirdPartyLocalSendTests does).
    try await on("b", ["ip", "route", "replace", "224.0.0.0/4", "dev", "mdns0"])
    defer { Task { try? await on("b", ["ip", "route", "del", "224.0.0.0/4"], mayFail: true) } }
    let output = try temporaryDirectory("ls-out")
    let device = try LocalSendTests.ThirdPartyLocalSendTests.localsendCLI(
      ["receive", "--json", "--output", output.path], home: home)
    defer { device.signal(SIGKILL) }
    let ended = try #require(
      await events.waitForEvent("send-ended", timeout: .seconds(90)) {
        $0["send"] as? String == id
      }, "\(events.stdout)\n\(daemon.process.stderr)\n\(device.stdout)")
    #expect(ended["state"] as? String == "delivered", "\(ended)")
    #expect(
      try sha256(of: output.appendingPathComponent("for-the-phone.bin")) == sha256(of: file))
  }

  @Test(
    "a Ferry peer announcing the queued key without holding it gets nothing and costs no attempt; the holder gets the send"
  )
  func spoofedKeyCostsNothing() async throws {
    let daemon = try await daemon("spoof-a")
    defer { daemon.process.signal(SIGKILL) }
    let events = try daemon.events()
    defer { events.signal(SIGKILL) }
    let homeB = Harness.freshFerryHome()
    let keyB = try await DaemonProcess.fingerprint(home: homeB)
    // On host c, a Ferry receiver with a key of its own (it takes anything), announced a
    // second time under the name and key of b, who is not there.
    let trap = try temporaryDirectory("spoof-c")
    let impostor = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", trap.path, "--name", "spoof-c"], bus: .harness, on: "c")
    defer { impostor.process.signal(SIGKILL) }
    let fake = try ChildProcess(
      Harness.on!,
      [
        "c", "/usr/bin/avahi-publish-service", "spoof-b", "_ferry._tcp", "\(impostor.port)",
        "v=1", "fp=\(keyB)",
      ])
    defer { fake.signal(SIGKILL) }
    let file = try temporaryDirectory("spoof-src").appendingPathComponent("for-b.bin")
    try writeFile(file, size: 200_000, seed: 7)
    let queued = try await daemon.ferry(["send", "--later", "--to", keyB, file.path])
    #expect(queued.status == 0, "\(queued.stderr)")
    let id = queued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    // The impostor's announcement starts an attempt, which fails the pin and waits again.
    let began = await events.waitForEvent("delivering", timeout: .seconds(60)) {
      $0["send"] as? String == id
    }
    #expect(began != nil, "\(events.stdout)\n\(daemon.process.stderr)")
    var send: [String: Any]?
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
      let listed = try await daemon.ferry(["outbox", "--json"])
      send = listed.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }
        .first { $0["id"] as? String == id }
      if let state = send?["state"] as? String, state != "delivering" { break }
      try await Task.sleep(for: .milliseconds(200))
    }
    #expect(send?["state"] as? String == "queued", "\(String(describing: send))")
    #expect(send?["attempts"] as? Int == 0, "not counted: \(String(describing: send))")
    #expect(try FileManager.default.contentsOfDirectory(atPath: trap.path).isEmpty)
    #expect(impostor.process.events("invitation").isEmpty, "\(impostor.process.stdout)")
    // b comes: it gets the send when it is tried again (a minute after the failed one).
    let destination = try temporaryDirectory("spoof-b")
    let receiver = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", "spoof-b-real"], bus: .harness,
      on: "b", home: homeB)
    defer { receiver.process.signal(SIGKILL) }
    let ended = try #require(
      await events.waitForEvent("send-ended", timeout: .seconds(150)) {
        $0["send"] as? String == id
      }, "\(events.stdout)\n\(daemon.process.stderr)")
    #expect(ended["state"] as? String == "delivered", "\(ended)")
    #expect(try sha256(of: destination.appendingPathComponent("for-b.bin")) == sha256(of: file))
    #expect(try FileManager.default.contentsOfDirectory(atPath: trap.path).isEmpty)
  }
}
