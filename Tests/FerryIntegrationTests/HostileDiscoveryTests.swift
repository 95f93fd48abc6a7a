import Ferry
import Foundation
import Testing

/// Advertisements made by someone else (avahi-publish-service, pointing at the independent
/// hostile peer): fingerprints are identities, names are labels, and what a network says about
/// itself reaches the terminal escaped.
@Suite(
  "Hostile advertisements", .timeLimit(.minutes(3)), .needsLocalAvahi, .serialized,
  .needsHostileRun, .endsItsProcesses)
struct HostileDiscoveryTests {
  /// `avahi-publish-service NAME TYPE PORT TXT...`, running until stopped.
  func publish(_ name: String, type: ServiceType, port: Int, txt: [String]) throws -> ChildProcess {
    try ChildProcess(
      "/usr/bin/avahi-publish-service", [name, type.dnsSDType, "\(port)"] + txt)
  }

  /// Waits until `ferry browse` lists every one of `names`: one browse, for as long as that
  /// takes, then stopped.
  func waitUntilListed(_ names: [String], type: ServiceType) async throws {
    let browse = try ChildProcess.ferry(["browse", "--service", type.name, "--json"])
    defer { browse.signal(SIGKILL) }
    for name in names {
      let line = await browse.waitForLine { jsonObject($0)?["name"] as? String == name }
      if line == nil { Issue.record("\(name) was not advertised: \(browse.stdout)") }
    }
    browse.signal(SIGINT)
    #expect(await browse.waitForExit() == 130, "\(browse.stderr)")
  }

  @Test(
    "item 4: --to matches keys first; 8 digits pin nothing; a hex-only name is never a name; a value naming one receiver by key and another by name is ambiguous"
  )
  func toHijack() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let destination = try temporaryDirectory("real-dst")
    let realStarted = try await ReceiverProcess.start(
      [
        "--yes", "--json", "--dir", destination.path, "--service", type.name, "--name", "real-desk",
      ],
      bus: .harness)
    let real = realStarted.process
    defer { real.signal(SIGKILL) }
    let key = try #require(realStarted.fingerprint)
    // The impostor: a TLS endpoint of its own, advertised under names made from the real key.
    let (impostor, port, impostorKey) = try await HostilePeer.serve("decline", ["--hold", "30"])
    defer { impostor.signal(SIGKILL) }
    let fake8 = try publish(
      String(key.prefix(8)), type: type, port: port, txt: ["v=1", "fp=\(impostorKey)"])
    defer { fake8.signal(SIGTERM) }
    let fake4 = try publish(
      String(key.prefix(4)), type: type, port: port, txt: ["v=1", "fp=\(impostorKey)"])
    defer { fake4.signal(SIGTERM) }
    try await waitUntilListed(
      ["real-desk", String(key.prefix(8)), String(key.prefix(4))], type: type)

    let file = try temporaryDirectory("hijack-src").appendingPathComponent("secret.txt")
    try writeFile(file, size: 4000)
    let home = Harness.freshFerryHome()
    func send(_ to: String, home: String = home) async throws -> (
      status: Int32, stdout: String, stderr: String
    ) {
      // Its --timeout, plus what a loaded machine adds.
      try await run(
        Harness.ferryBinary,
        ["send", "--to", to, "--service", type.name, "--timeout", "60", file.path],
        environment: ["FERRY_HOME": home], timeout: .seconds(60) + Harness.margin)
    }

    // 8 digits are refused before anything is looked for.
    let short = try await send(String(key.prefix(8)))
    #expect(short.status == 2, "\(short.stderr)")
    #expect(short.stderr.contains("too few"), "\(short.stderr)")
    // 16 digits find the real receiver, never the one merely named like it.
    #expect(try await send(String(key.prefix(16))).status == 0)
    // Now the real key is in peers.json, merely seen: 8 digits still pin nothing (a peer seen
    // once may be a key made to share them). Trusted, 8 digits resolve to it (and still not to
    // the name).
    let seen = try await send(String(key.prefix(8)))
    #expect(seen.status == 2 && seen.stderr.contains("trusted"), "\(seen.stderr)")
    let trusted = try await run(
      Harness.ferryBinary, ["trust", key], environment: ["FERRY_HOME": home])
    #expect(trusted.status == 0, "\(trusted.stderr)")
    let pinned = try await send(String(key.prefix(8)))
    #expect(pinned.status == 0, "\(pinned.stderr)")
    // The real receiver got it: it has it already (found identical, not sent again nor
    // duplicated) where the filesystem keeps extended attributes, else it saved a copy beside.
    let received = try FileManager.default.contentsOfDirectory(atPath: destination.path)
      .filter { $0 != ".ferry-partial" }.sorted()
    if Harness.keepsUserAttributes {
      #expect(pinned.stderr.contains("1 already there"), "\(pinned.stderr)")
      #expect(received == ["secret.txt"])
    } else {
      #expect(received == ["secret (1).txt", "secret.txt"])
    }
    // 4 digits: the known real key by fingerprint, and the impostor by name: ambiguous.
    let ambiguous = try await send(String(key.prefix(4)))
    #expect(ambiguous.status == 5, "\(ambiguous.stderr)")
    #expect(ambiguous.stderr.contains("names one receiver by its fingerprint"))
    // --address with 8 unknown digits: refused too.
    let direct = try await run(
      Harness.ferryBinary,
      ["send", "--address", "127.0.0.1:\(port)", "--to", String(impostorKey.prefix(8)), file.path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    #expect(direct.status == 2, "\(direct.stderr)")
    #expect(
      !impostor.stdout.contains("\"invited\""), "the impostor was invited: \(impostor.stdout)")
  }

  @Test("item 10: ferry browse shows a hostile service name escaped")
  func browseNames() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let name = "evil\u{1B}]0;pwned\u{7}\u{1B}[2J\u{202E}txt"
    let fake = try publish(name, type: type, port: 9, txt: ["v=1"])
    defer { fake.signal(SIGTERM) }
    let established = await fake.waitForLine(onStderr: true) { $0.hasPrefix("Established") }
    try #require(established != nil, "avahi-publish-service: \(fake.stderr)")
    // Each browse runs until it lists the service, then is stopped.
    let browse = try ChildProcess.ferry(["browse", "--service", type.name])
    defer { browse.signal(SIGKILL) }
    #expect(
      await browse.waitForText("evil\\u{1B}]0;pwned"), "\(browse.stdout) \(fake.stderr)")
    browse.signal(SIGINT)
    #expect(await browse.waitForExit() == 130, "\(browse.stderr)")
    #expect(!browse.stdout.unicodeScalars.contains("\u{1B}"))
    #expect(rawControls(in: browse.stdout).isEmpty)
    let json = try ChildProcess.ferry(["browse", "--service", type.name, "--json"])
    defer { json.signal(SIGKILL) }
    let found = await json.waitForLine { jsonObject($0)?["name"] as? String == name }
    #expect(found != nil, "JSON keeps the exact name: \(json.stdout)")
    json.signal(SIGINT)
    #expect(await json.waitForExit() == 130, "\(json.stderr)")
  }
}
