import Foundation
import Testing

extension LocalSendTests {
  /// Ferry against localsend-cli 0.1.1 from PyPI (Tests/ThirdParty/requirements.txt), a LocalSend
  /// implementation nobody here wrote: what a user with such a "phone" meets. It sends over
  /// HTTPS without a client certificate, its receiver answers a text's prepare-upload with 200
  /// and a token, and it announces itself every 5 s and answers no announcement.
  @Suite(
    "A third-party LocalSend implementation (localsend-cli from PyPI)", .timeLimit(.minutes(5)),
    .needsToRunOnHostA, .serialized, .endsItsProcesses)
  struct ThirdPartyLocalSendTests {
    /// Where scripts/setup installed it.
    static var installed: String {
      URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build-pypi").path
    }

    /// `localsend-cli ARGUMENTS` on host b with a home of its own (its certificate is made
    /// there), run by Debian's python3.
    static func localsendCLI(_ arguments: [String], home: String? = nil) throws -> ChildProcess {
      let home = home ?? NSTemporaryDirectory() + "localsend-cli-\(UUID().uuidString)"
      try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
      return try ChildProcess(
        Harness.on!,
        [
          // A CA bundle named in the environment (as on some build machines) would make its
          // requests verify certificates it means not to: left out, as on a user's machine.
          "b", "env", "-u", "REQUESTS_CA_BUNDLE", "-u", "CURL_CA_BUNDLE", "HOME=\(home)",
          "PYTHONPATH=\(installed)", "/usr/bin/python3", "-m", "localsend_cli.main",
        ] + arguments)
    }

    /// `ferry receive --localsend --yes --json ARGUMENTS` on host a into a fresh folder, once
    /// it listens.
    func receiver(_ arguments: [String] = []) async throws -> (ChildProcess, URL) {
      let destination = try temporaryDirectory("lscli-dst")
      let process = try ChildProcess.ferry(
        [
          "receive", "--localsend", "--yes", "--json", "--name", LocalSendPeer.alias("rx"),
          "--dir", destination.path,
        ] + arguments,
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      let ready = await process.waitForLine(onStderr: true) {
        $0.contains("Also receiving from LocalSend apps")
      }
      #expect(ready != nil, "\(process.stderr)")
      return (process, destination)
    }

    @Test(
      "it sends with no certificate: turned away, and told where the person looks (once per address, with the option); with --localsend-unverified its file arrives, shown unverified"
    )
    func sendsWithoutCertificate() async throws {
      let source = try temporaryDirectory("lscli-src").appendingPathComponent("from-cli.txt")
      try writeFile(source, size: 3000, seed: 5)
      let (strict, strictFolder) = try await receiver()
      defer { strict.signal(SIGKILL) }
      let home = NSTemporaryDirectory() + "localsend-cli-\(UUID().uuidString)"
      for _ in 0..<2 {
        let refused = try Self.localsendCLI(
          ["send", Harness.hostAddresses["a"]!, source.path, "--json"], home: home)
        #expect(await refused.waitForExit() != nil, "\(refused.stdout)")
        #expect(!refused.stdout.contains("\"sent\""), "\(refused.stdout)")
      }
      let event = try #require(await strict.waitForEvent("sender-refused"), "\(strict.stdout)")
      #expect(event.string("code") == "no-certificate", "\(event)")
      #expect(event.string("address") == Harness.hostAddresses["b"], "\(event)")
      #expect(
        await strict.waitForLine(onStderr: true) { $0.contains("--localsend-unverified") } != nil,
        "\(strict.stderr)")
      // Its app retried: said once, not per try.
      #expect(strict.events("sender-refused").count == 1, "\(strict.stdout)")
      #expect(
        !FileManager.default.fileExists(
          atPath: strictFolder.appendingPathComponent("from-cli.txt").path))
      strict.signal(SIGKILL)
      _ = await strict.waitForExit()

      let (open, folder) = try await receiver(["--localsend-unverified"])
      defer { open.signal(SIGKILL) }
      let sent = try Self.localsendCLI(
        ["send", Harness.hostAddresses["a"]!, source.path, "--json"], home: home)
      #expect(await sent.waitForExit() == 0, "\(sent.stdout) \(sent.stderr)")
      #expect(sent.stdout.contains("\"sent\""), "\(sent.stdout)")
      let invitation = try #require(await open.waitForEvent("invitation"), "\(open.stdout)")
      #expect(invitation.bool("verified") == false, "\(invitation)")
      let arrived = await open.waitForEvent("file-done") { $0.string("status") == "stored" }
      #expect(arrived != nil, "\(open.stdout)")
      #expect(
        try Data(contentsOf: folder.appendingPathComponent("from-cli.txt"))
          == Data(contentsOf: source))
    }

    @Test(
      "it sends the same files again and one more: only the new one is uploaded, the rest reported identical; a third time nothing moves (204)"
    )
    func sendsAgain() async throws {
      let source = try temporaryDirectory("lscli-again")
      let sizes = ["a.txt": 3000, "b.bin": 400_000, "c.txt": 10, "d.txt": 700]
      for (name, size) in sizes {
        try writeFile(source.appendingPathComponent(name), size: size, seed: UInt64(size))
      }
      let paths = { (names: [String]) in names.map { source.appendingPathComponent($0).path } }
      let (receiver, destination) = try await receiver(["--localsend-unverified"])
      defer { receiver.signal(SIGKILL) }
      let home = NSTemporaryDirectory() + "localsend-cli-\(UUID().uuidString)"
      // What localsend-cli uploaded: a `sending` event per file it was given a token for.
      func send(_ names: [String]) async throws -> (uploaded: [String], stdout: String) {
        let cli = try Self.localsendCLI(
          ["send", Harness.hostAddresses["a"]!] + paths(names) + ["--json"], home: home)
        #expect(await cli.waitForExit() == 0, "\(cli.stdout) \(cli.stderr)")
        return (cli.events("sending").compactMap { $0.string("name") }.sorted(), cli.stdout)
      }
      func settled(_ count: Int) async -> [String: [String]] {
        _ = await receiver.waitForEvent("file-done", skipping: count - 1)
        var byStatus: [String: [String]] = [:]
        for event in receiver.events("file-done") {
          let name = URL(fileURLWithPath: event.string("path") ?? "").lastPathComponent
          byStatus[event.string("status") ?? "", default: []].append(name)
        }
        return byStatus.mapValues { $0.sorted() }
      }

      let first = try await send(["a.txt", "b.bin", "c.txt"])
      #expect(first.uploaded == ["a.txt", "b.bin", "c.txt"], "\(first.stdout)")
      #expect(await settled(3) == ["stored": ["a.txt", "b.bin", "c.txt"]], "\(receiver.stdout)")

      let second = try await send(["a.txt", "b.bin", "c.txt", "d.txt"])
      #expect(second.uploaded == ["d.txt"], "only what is missing moves: \(second.stdout)")
      #expect(
        await settled(7)
          == [
            "stored": ["a.txt", "b.bin", "c.txt", "d.txt"],
            "identical": ["a.txt", "b.bin", "c.txt"],
          ],
        "\(receiver.stdout)")
      let third = try await send(["a.txt", "b.bin", "c.txt", "d.txt"])
      #expect(third.uploaded.isEmpty, "\(third.stdout)")
      #expect(third.stdout.contains("(204)"), "nothing wanted is LocalSend's 204: \(third.stdout)")
      #expect(
        await settled(11)
          == [
            "stored": ["a.txt", "b.bin", "c.txt", "d.txt"],
            "identical": ["a.txt", "a.txt", "b.bin", "b.bin", "c.txt", "c.txt", "d.txt"],
          ], "\(receiver.stdout)")
      // Nothing written twice, no renamed copies.
      #expect(
        try FileManager.default.contentsOfDirectory(atPath: destination.path).sorted()
          == ["a.txt", "b.bin", "c.txt", "d.txt"])
      for (name, _) in sizes {
        #expect(
          try Data(contentsOf: destination.appendingPathComponent(name))
            == Data(contentsOf: source.appendingPathComponent(name)))
      }
    }

    @Test(
      "ferry send --localsend --text to it: it answers with a token, so the text is uploaded as the file and ferry says so (never 'showed' it)"
    )
    func textToReceiver() async throws {
      let output = try temporaryDirectory("lscli-out")
      let cli = try Self.localsendCLI(["receive", "--output", output.path, "--json"])
      defer { cli.signal(SIGKILL) }
      #expect(await cli.waitForEvent("ready") != nil, "\(cli.stdout) \(cli.stderr)")
      let ferry = try ChildProcess.ferry(
        [
          "send", "--localsend", "--address", "\(Harness.hostAddresses["b"]!):53317", "--text",
          "the door code is 4711",
        ],
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      #expect(await ferry.waitForExit() == 0, "\(ferry.stderr)")
      #expect(ferry.stderr.contains("took the text as a file"), "\(ferry.stderr)")
      #expect(!ferry.stderr.contains("showed the text"), "\(ferry.stderr)")
      let shown = await cli.waitForEvent("text")
      #expect(shown?.string("text") == "the door code is 4711", "\(cli.stdout)")
    }

    @Test(
      "it announces every 5 s and answers nothing: ferry send --localsend --to its alias finds it, pins its certificate and delivers"
    )
    func foundByItsAnnouncements() async throws {
      // Its announcements go by the default route: one for multicast inside host b (the test's
      // own namespace), taken away after.
      _ = try await run(
        Harness.on!, ["b", "ip", "route", "replace", "224.0.0.0/4", "dev", "mdns0"])
      defer {
        Task { _ = try? await run(Harness.on!, ["b", "ip", "route", "del", "224.0.0.0/4"]) }
      }
      let output = try temporaryDirectory("lscli-out")
      let cli = try Self.localsendCLI(["receive", "--output", output.path, "--json"])
      defer { cli.signal(SIGKILL) }
      #expect(await cli.waitForEvent("ready") != nil, "\(cli.stdout) \(cli.stderr)")
      // Its alias is "localsend-cli@" and the host's name (gethostname: namespaces share it).
      var name = [CChar](repeating: 0, count: 256)
      gethostname(&name, name.count)
      let host = String(
        decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      let alias = "localsend-cli@\(host)"
      let source = try temporaryDirectory("lscli-src").appendingPathComponent("to-cli.bin")
      try writeFile(source, size: 200_000, seed: 9)
      let ferry = try ChildProcess.ferry(
        ["send", "--localsend", "--json", "--to", alias, "--timeout", "60", source.path],
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      #expect(await ferry.waitForExit() == 0, "\(ferry.stderr)")
      let saved = await cli.waitForEvent("saved")
      #expect(saved != nil, "\(cli.stdout)")
      #expect(
        try Data(contentsOf: output.appendingPathComponent("to-cli.bin"))
          == Data(contentsOf: source))
      let found = try #require(ferry.events("peer-found").first, "\(ferry.stdout)")
      #expect(found.string("protocol") == "localsend")
    }
  }
}
