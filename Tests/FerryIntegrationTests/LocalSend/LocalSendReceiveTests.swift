import Foundation
import Testing

extension LocalSendTests {
  /// `ferry receive --localsend` on host a, the independent LocalSend peer sending from host b:
  /// discovery by real multicast over the hosts' bridge, HTTPS with client certificates, the
  /// files through Ferry's transfer core.
  @Suite(
    "LocalSend senders to ferry receive", .timeLimit(.minutes(5)), .needsToRunOnHostA, .serialized,
    .endsItsProcesses)
  struct LocalSendReceiveTests {
    /// A tree: a 5 MiB file, an empty one, nested folders, and `small` small files.
    func tree(small: Int = 0) throws -> URL {
      let root = try temporaryDirectory("ls-src")
      try writeFile(root.appendingPathComponent("big.bin"), size: 5 << 20, seed: 3)
      try writeFile(root.appendingPathComponent("nested/deeper/note.txt"), size: 1234, seed: 4)
      try writeFile(root.appendingPathComponent("nested/empty"), size: 0)
      for index in 0..<small {
        try writeFile(
          root.appendingPathComponent("many/f\(index).dat"), size: 100 + index, seed: UInt64(index))
      }
      return root
    }

    /// Starts `ferry receive --localsend ARGUMENTS --json --dir DIR` named `name`, ready once it
    /// says it receives from LocalSend apps.
    func receiver(_ name: String, into dir: URL, _ arguments: [String]) async throws -> ChildProcess
    {
      let process = try ChildProcess.ferry(
        ["receive", "--localsend", "--json", "--name", name, "--dir", dir.path] + arguments,
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      let ready = await process.waitForLine(onStderr: true) {
        $0.contains("Also receiving from LocalSend apps")
      }
      #expect(ready != nil, "ferry receive --localsend did not start: \(process.stderr)")
      return process
    }

    func same(_ a: URL, _ b: URL) -> Bool {
      (try? Data(contentsOf: a)) == (try? Data(contentsOf: b))
    }

    @Test("files, an empty file, nested folders and 1000 small files arrive byte for byte")
    func files() async throws {
      let source = try tree(small: 1000)
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      let ferry = try await receiver(name, into: destination, ["--yes", "--once"])
      defer { ferry.signal(SIGKILL) }
      let sender = try LocalSendPeer.start(
        "send",
        ["--to", name, "--discover-seconds", "60"]
          + ["big.bin", "nested", "many"].map { source.appendingPathComponent($0).path },
        alias: LocalSendPeer.alias("phone"))
      defer { sender.signal(SIGKILL) }
      #expect(await sender.waitForExit(timeout: .seconds(120)) == 0, "\(sender.stdout)")
      #expect(await ferry.waitForExit() == 0, "\(ferry.stderr)")
      for path in [
        "big.bin", "nested/deeper/note.txt", "nested/empty", "many/f0.dat", "many/f999.dat",
      ] {
        #expect(
          same(source.appendingPathComponent(path), destination.appendingPathComponent(path)),
          "\(path)")
      }
      let many = try FileManager.default.contentsOfDirectory(
        atPath: destination.appendingPathComponent("many").path)
      #expect(many.count == 1000)
      let asked = try #require(ferry.events("invitation").first)
      #expect(asked.string("protocol") == "localsend")
      #expect(asked.bool("verified") == true)
      #expect(asked.int("files") == 1003)
      let done = try #require(ferry.events("done").last)
      #expect(done.int("files") == 1003)
      #expect(done.isNull("error"))
      // Nothing staged is left behind.
      let left = try FileManager.default.contentsOfDirectory(atPath: destination.path)
      #expect(Set(left) == ["big.bin", "nested", "many"])
    }

    @Test("a text is shown escaped; a decline is 403 to the sender")
    func textAndDecline() async throws {
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      // --accept-from someone else: the sender is declined without asking.
      let ferry = try await receiver(
        name, into: destination, ["--accept-from", String(repeating: "AB", count: 32)])
      defer { ferry.signal(SIGKILL) }
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.txt")
      try writeFile(file, size: 10)
      let declined = try LocalSendPeer.start(
        "send", ["--to", name, "--discover-seconds", "60", "--expect", "declined", file.path],
        alias: LocalSendPeer.alias("phone"))
      // Its discovery alone may take the 60 s of --discover-seconds on a loaded machine.
      #expect(await declined.waitForExit(timeout: .seconds(120)) == 0, "\(declined.stdout)")
      let event = try #require(await ferry.waitForEvent("declined"))
      #expect(event.string("reason")?.contains("not an accepted sender") == true)
      #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path).isEmpty)
      ferry.signal(SIGKILL)
      _ = await ferry.waitForExit()  // port 53317 is free only once it is gone

      let open = try await receiver(name, into: destination, ["--yes"])
      defer { open.signal(SIGKILL) }
      let texter = try LocalSendPeer.start(
        "send", ["--to", name, "--discover-seconds", "60", "--text", "hello\u{1B}[2Jthere"],
        alias: LocalSendPeer.alias("phone"))
      #expect(await texter.waitForExit(timeout: .seconds(120)) == 0, "\(texter.stdout)")
      let text = try #require(await open.waitForEvent("text"))
      #expect(text.string("text") == "hello\u{1B}[2Jthere")
    }

    @Test(
      "a PIN: none or a wrong one is 401, the fourth try 429, the right one from elsewhere works")
    func pin() async throws {
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      let ferry = try await receiver(name, into: destination, ["--yes", "--pin", "4711"])
      defer { ferry.signal(SIGKILL) }
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.txt")
      try writeFile(file, size: 10)
      let address = "\(Harness.hostAddresses["a"]!):53317"
      for (pin, expected) in [
        (nil, "pin-required"), ("1", "pin-required"), ("2", "pin-required"),
        ("3", "pin-required"), ("4711", "too-many-attempts"),
      ] {
        let sender = try LocalSendPeer.start(
          "send",
          ["--address", address, "--expect", expected, file.path]
            + (pin.map { ["--pin", $0] } ?? []),
          alias: LocalSendPeer.alias("phone"))
        #expect(await sender.waitForExit() == 0, "\(pin ?? "none"): \(sender.stdout)")
      }
      // Host c has made no wrong guess.
      let honest = try LocalSendPeer.start(
        "send", ["--address", address, "--pin", "4711", file.path],
        alias: LocalSendPeer.alias("laptop"), on: "c")
      #expect(await honest.waitForExit() == 0, "\(honest.stdout)")
      #expect(same(file, destination.appendingPathComponent("a.txt")))
    }

    @Test("discovery over IPv6 alone, and by a multicast answer when the announcer has no server")
    func discoveryVariants() async throws {
      let name = LocalSendPeer.alias("ferry-rx")
      let ferry = try await receiver(name, into: try temporaryDirectory("ls-dst"), ["--yes"])
      defer { ferry.signal(SIGKILL) }
      // No server: ferry's register answer cannot reach it, so ferry answers by multicast
      // (no announce flag), as LocalSend apps do. Each listens 10 s: on a loaded machine an
      // answer may come seconds late.
      let quiet = try LocalSendPeer.start(
        "discover", ["--no-server", "--seconds", "10"], alias: LocalSendPeer.alias("no-server"))
      #expect(await quiet.waitForExit() == 0, "\(quiet.stdout)")
      let answers = quiet.events("found").filter {
        $0.string("alias") == name && $0.string("via") == "multicast"
          && $0.bool("announce") != true
      }
      #expect(!answers.isEmpty, "\(quiet.stdout)")
      // IPv6 alone: the peer's IPv4 group is one nobody else uses.
      let six = try LocalSendPeer.start(
        "discover", ["--ipv6", "--multicast-group", "239.255.77.77", "--seconds", "10"],
        alias: LocalSendPeer.alias("six"))
      #expect(await six.waitForExit() == 0, "\(six.stdout)")
      let overSix = six.events("found").filter {
        $0.string("alias") == name && ($0.string("address") ?? "").contains(":")
      }
      #expect(!overSix.isEmpty, "\(six.stdout)")
      // And ferry browse hears an IPv6-only device.
      let device = LocalSendPeer.alias("six-rx")
      let peer = try LocalSendPeer.start(
        "receive",
        [
          "--dir", try temporaryDirectory("ls-dst").path, "--seconds", "120", "--ipv6",
          "--multicast-group", "239.255.77.77",
        ], alias: device)
      defer { peer.signal(SIGKILL) }
      #expect(await LocalSendPeer.waitUntilListening(peer), "\(peer.stdout)")
      let browse = try ChildProcess.ferry(
        ["browse", "--localsend", "--timeout", "10", "--json"],
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      #expect(await browse.waitForExit() == 0, "\(browse.stderr)")
      let found = browse.events("peer-found").first { $0.string("peer") == device }
      let address = found?.string("address") ?? ""
      #expect(address.hasPrefix("["), "\(browse.stdout)")
    }

    @Test("the sender cancels mid-file: the transfer ends cancelled, nothing partial is placed")
    func senderCancels() async throws {
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      let ferry = try await receiver(name, into: destination, ["--yes", "--once"])
      defer { ferry.signal(SIGKILL) }
      let file = try temporaryDirectory("ls-src").appendingPathComponent("big.bin")
      try writeFile(file, size: 40 << 20)
      let sender = try LocalSendPeer.start(
        "send",
        [
          "--address", "\(Harness.hostAddresses["a"]!):53317", "--cancel-after-bytes", "2000000",
          file.path,
        ],
        alias: LocalSendPeer.alias("phone"))
      #expect(await sender.waitForExit(timeout: .seconds(60)) == 0, "\(sender.stdout)")
      let done = try #require(await ferry.waitForEvent("done"))
      #expect(!done.isNull("error"), "\(done)")
      #expect(await ferry.waitForExit() == 1, "\(ferry.stderr)")
      #expect(
        !FileManager.default.fileExists(atPath: destination.appendingPathComponent("big.bin").path))
      // LocalSend cannot resume: the note does not promise it.
      #expect(ferry.stderr.contains("cannot resume"), "\(ferry.stderr)")
      #expect(!ferry.stderr.contains("again resumes"), "\(ferry.stderr)")
    }

    @Test("a checksum that does not match is 422 and nothing is placed")
    func checksumMismatch() async throws {
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      let ferry = try await receiver(name, into: destination, ["--yes"])
      defer { ferry.signal(SIGKILL) }
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.bin")
      try writeFile(file, size: 300_000)
      let sender = try LocalSendPeer.start(
        "send",
        [
          "--to", name, "--discover-seconds", "60", "--bad-checksum", "--expect",
          "checksum-mismatch", file.path,
        ],
        alias: LocalSendPeer.alias("phone"))
      #expect(await sender.waitForExit(timeout: .seconds(120)) == 0, "\(sender.stdout)")
      #expect(
        sender.events("uploaded").contains { $0.int("status") == 422 }, "\(sender.stdout)")
      _ = await ferry.waitForEvent("done")
      #expect(
        !FileManager.default.fileExists(atPath: destination.appendingPathComponent("a.bin").path))
    }

    @Test(
      "a body longer than announced is 400, a shorter one 422: nothing placed, the receiver lives")
    func sizesBind() async throws {
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      let ferry = try await receiver(name, into: destination, ["--yes"])
      defer { ferry.signal(SIGKILL) }
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.bin")
      try writeFile(file, size: 300_000)
      let address = "\(Harness.hostAddresses["a"]!):53317"
      for (delta, status, outcome) in [
        ("100", 400, "upload-failed"), ("-100", 422, "checksum-mismatch"),
      ] {
        let sender = try LocalSendPeer.start(
          "send",
          ["--address", address, "--body-delta", delta, "--expect", outcome, file.path],
          alias: LocalSendPeer.alias("phone"))
        #expect(await sender.waitForExit(timeout: .seconds(60)) == 0, "\(sender.stdout)")
        #expect(
          sender.events("uploaded").contains { $0.int("status") == status }, "\(sender.stdout)")
      }
      #expect(ferry.isRunning, "\(ferry.stderr)")
      #expect(
        !FileManager.default.fileExists(atPath: destination.appendingPathComponent("a.bin").path))
      // An honest send still works.
      let honest = try LocalSendPeer.start(
        "send", ["--address", address, file.path], alias: LocalSendPeer.alias("phone"))
      #expect(await honest.waitForExit(timeout: .seconds(60)) == 0, "\(honest.stdout)")
      #expect(
        (try? Data(contentsOf: destination.appendingPathComponent("a.bin")))
          == (try? Data(contentsOf: file)))
    }

    @Test(
      "an app of 1.17 (no client certificate) is refused, unless --localsend-legacy: then unverified"
    )
    func legacySender() async throws {
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.txt")
      try writeFile(file, size: 10)
      let address = "\(Harness.hostAddresses["a"]!):53317"
      let strict = try await receiver(name, into: destination, ["--yes"])
      let refused = try LocalSendPeer.start(
        "send",
        ["--legacy", "--address", address, "--expect", "connect-failed", file.path],
        alias: LocalSendPeer.alias("old phone"))
      #expect(await refused.waitForExit() == 0, "\(refused.stdout)")
      strict.signal(SIGKILL)
      _ = await strict.waitForExit()

      // Legacy senders allowed, but an accept list never takes one, not even naming the very
      // fingerprint it claims.
      let claimed = String(repeating: "AB", count: 32)
      let legacy = try await receiver(
        name, into: destination, ["--localsend-legacy", "--accept-from", claimed])
      defer { legacy.signal(SIGKILL) }
      let declined = try LocalSendPeer.start(
        "send",
        [
          "--legacy", "--fingerprint", claimed, "--address", address, "--expect", "declined",
          file.path,
        ],
        alias: LocalSendPeer.alias("old phone"))
      #expect(await declined.waitForExit() == 0, "\(declined.stdout)")
      let asked = try #require(await legacy.waitForEvent("invitation"))
      #expect(asked.bool("verified") == false)
      #expect(
        !FileManager.default.fileExists(atPath: destination.appendingPathComponent("a.txt").path))
    }

    @Test(
      "ferry send --localsend the same tree again: nothing moves, the sender says so and the receiver reports identical; a new file alone moves"
    )
    func sendsAgain() async throws {
      let source = try tree()
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      let ferry = try await receiver(name, into: destination, ["--yes"])
      defer { ferry.signal(SIGKILL) }
      let home = Harness.freshFerryHome()
      func send() async throws -> ChildProcess {
        let sender = try ChildProcess.ferry(
          [
            "send", "--localsend", "--json", "--address",
            "\(Harness.hostAddresses["a"]!):53317", source.path,
          ], on: "b",
          environment: TestEnvironment.noBus.merging(["FERRY_HOME": home]) { $1 })
        #expect(await sender.waitForExit() == 0, "\(sender.stderr)")
        return sender
      }
      _ = try await send()
      // big.bin, note.txt, empty: three files (LocalSend sends files only).
      _ = await ferry.waitForEvent("file-done", skipping: 2)
      let again = try await send()
      let done = try #require(again.events("done").first, "\(again.stdout)")
      #expect(done.int("bytes_sent") == 0, "\(done) \(ferry.stdout)")
      #expect(
        again.stderr.contains("did not ask for any of 3 files (it has them already"),
        "\(again.stderr)")
      let identical = await ferry.waitForEvent("file-done", skipping: 2) {
        $0.string("status") == "identical"
      }
      #expect(identical != nil, "\(ferry.stdout)")

      try writeFile(source.appendingPathComponent("nested/new.txt"), size: 500, seed: 8)
      let third = try await send()
      let moved = try #require(third.events("done").first, "\(third.stdout)")
      #expect(moved.int("bytes_sent") == 500, "only the new file moves: \(moved)")
      #expect(moved.int("stored") == 1, "\(moved)")
      #expect(
        third.stderr.contains("did not ask for 3 files (it has them already"), "\(third.stderr)")
      #expect(
        same(
          destination.appendingPathComponent("\(source.lastPathComponent)/nested/new.txt"),
          source.appendingPathComponent("nested/new.txt")))
    }

    @Test(
      "a sender that gives no SHA-256 sends the same tree again: all of it arrives again (nothing to compare), nothing fails"
    )
    func sendsAgainWithoutChecksums() async throws {
      let source = try tree()
      let destination = try temporaryDirectory("ls-dst")
      let name = LocalSendPeer.alias("ferry-rx")
      let ferry = try await receiver(name, into: destination, ["--yes"])
      defer { ferry.signal(SIGKILL) }
      let address = "\(Harness.hostAddresses["a"]!):53317"
      // One device (its certificate kept) twice: the receiver holds its files.
      let home = NSTemporaryDirectory() + "localsend-peer-\(UUID().uuidString)"
      for round in 1...2 {
        let sender = try LocalSendPeer.start(
          "send",
          ["--no-checksum", "--address", address]
            + ["big.bin", "nested"].map { source.appendingPathComponent($0).path },
          alias: LocalSendPeer.alias("phone"), home: home)
        defer { sender.signal(SIGKILL) }
        #expect(await sender.waitForExit() == 0, "round \(round): \(sender.stdout)")
        #expect(
          await ferry.waitForEvent("done", skipping: round - 1) { $0.isNull("error") } != nil,
          "round \(round): \(ferry.stdout)")
      }
      #expect(!ferry.events("file-done").contains { $0.string("status") == "identical" })
    }
  }
}
