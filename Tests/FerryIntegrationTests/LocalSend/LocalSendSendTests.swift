import Foundation
import Testing

extension LocalSendTests {
  /// `ferry send --localsend` on host a to the independent LocalSend peer receiving on host b:
  /// found by real multicast (or by address), its certificate pinned, exit codes and events as a
  /// Ferry send's.
  @Suite(
    "ferry send to LocalSend receivers", .timeLimit(.minutes(5)), .needsToRunOnHostA, .serialized,
    .endsItsProcesses)
  struct LocalSendSendTests {
    /// `ferry send --localsend --json ARGUMENTS` as a fresh identity; its exit status.
    func send(_ arguments: [String]) async throws -> (status: Int32?, process: ChildProcess) {
      let process = try ChildProcess.ferry(
        ["send", "--localsend", "--json", "--timeout", "60"] + arguments,
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      return (await process.waitForExit(timeout: .seconds(120)), process)
    }

    /// The peer receiving on host b into `dir`, with `arguments`, once listening; it runs until
    /// the caller kills it.
    func receiver(_ alias: String, into dir: URL, _ arguments: [String] = []) async throws
      -> ChildProcess
    {
      let peer = try LocalSendPeer.start("receive", ["--dir", dir.path] + arguments, alias: alias)
      #expect(await LocalSendPeer.waitUntilListening(peer), "\(peer.stdout)")
      return peer
    }

    @Test("files, an empty file, nested folders and 1000 small files, found by alias")
    func files() async throws {
      let source = try temporaryDirectory("ls-src")
      try writeFile(source.appendingPathComponent("big.bin"), size: 5 << 20, seed: 7)
      try writeFile(source.appendingPathComponent("nested/deeper/note.txt"), size: 999, seed: 8)
      try writeFile(source.appendingPathComponent("nested/empty"), size: 0)
      for index in 0..<1000 {
        try writeFile(
          source.appendingPathComponent("many/f\(index).dat"), size: 50 + index, seed: UInt64(index)
        )
      }
      let destination = try temporaryDirectory("ls-dst")
      let alias = LocalSendPeer.alias("Phone")
      let peer = try await receiver(alias, into: destination)
      defer { peer.signal(SIGKILL) }
      let (status, ferry) = try await send(
        ["--to", alias]
          + ["big.bin", "nested", "many"].map { source.appendingPathComponent($0).path })
      #expect(status == 0, "\(ferry.stderr)")
      for path in [
        "big.bin", "nested/deeper/note.txt", "nested/empty", "many/f0.dat", "many/f999.dat",
      ] {
        let sent = try Data(contentsOf: source.appendingPathComponent(path))
        let got = try? Data(contentsOf: destination.appendingPathComponent(path))
        #expect(sent == got, "\(path)")
      }
      let found = try #require(ferry.events("peer-found").first)
      #expect(found.string("protocol") == "localsend")
      let done = try #require(ferry.events("done").last)
      #expect(done.int("stored") == 1003)
      #expect(ferry.events("file-done").allSatisfy { $0.string("sha256")?.count == 64 })
    }

    @Test("a text by address; declined is exit 4, busy exit 1 (busy), a PIN exit 5 (pin)")
    func refusals() async throws {
      let destination = try temporaryDirectory("ls-dst")
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.txt")
      try writeFile(file, size: 10)
      let address = "\(Harness.hostAddresses["b"]!):53317"

      let texts = try await receiver(LocalSendPeer.alias("Phone"), into: destination)
      let (textStatus, textSend) = try await send(["--address", address, "--text", "hi there"])
      #expect(textStatus == 0, "\(textSend.stderr)")
      #expect(await texts.waitForEvent("text") { $0.string("message") == "hi there" } != nil)
      texts.signal(SIGKILL)
      _ = await texts.waitForExit()

      for (arguments, expected, code) in [
        (["--decline"], Int32(4), "declined"), (["--busy"], 1, "busy"),
        (["--pin", "1234"], 5, "pin"),
      ] {
        let peer = try await receiver(LocalSendPeer.alias("Phone"), into: destination, arguments)
        let (status, ferry) = try await send(["--address", address, file.path])
        #expect(status == expected, "\(arguments): \(ferry.stderr)")
        #expect(ferry.events("error").last?.string("code") == code, "\(ferry.stdout)")
        if code == "pin" {
          #expect(ferry.stderr.contains("--pin"))
          let (again, retried) = try await send(["--address", address, "--pin", "1234", file.path])
          #expect(again == 0, "\(retried.stderr)")
        }
        peer.signal(SIGKILL)
        _ = await peer.waitForExit()
      }
      #expect(
        FileManager.default.fileExists(atPath: destination.appendingPathComponent("a.txt").path))
    }

    @Test(
      "a LocalSend device under a trusted name with another key is KEY CHANGED: exit 5, nothing sent"
    )
    func keyChanged() async throws {
      let destination = try temporaryDirectory("ls-dst")
      let alias = LocalSendPeer.alias("Phone")
      let peer = try await receiver(alias, into: destination)
      defer { peer.signal(SIGKILL) }
      let home = Harness.freshFerryHome()
      let environment = TestEnvironment.noBus.merging(["FERRY_HOME": home]) { $1 }
      // This machine trusts another key under the device's name.
      let trusted = try await run(
        Harness.ferryBinary,
        ["trust", String(repeating: "AB", count: 32), "--name", alias], environment: environment)
      #expect(trusted.status == 0, "\(trusted.stderr)")
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.txt")
      try writeFile(file, size: 10)
      let ferry = try ChildProcess.ferry(
        ["send", "--localsend", "--json", "--timeout", "20", "--to", alias, file.path],
        environment: environment)
      #expect(await ferry.waitForExit(timeout: .seconds(60)) == 5, "\(ferry.stderr)")
      #expect(ferry.events("key-changed").count == 1, "\(ferry.stdout)")
      #expect(ferry.events("error").last?.string("code") == "key-changed")
      #expect(
        !FileManager.default.fileExists(atPath: destination.appendingPathComponent("a.txt").path))
    }

    @Test(
      "--to looks both ways: two receivers under one name need --protocol; one key goes by Ferry")
    func bothProtocols() async throws {
      let name = LocalSendPeer.alias("Twin")
      let phoneDir = try temporaryDirectory("ls-dst")
      let peer = try await receiver(name, into: phoneDir)
      defer { peer.signal(SIGKILL) }
      // A Ferry receiver on host c under the same name, and one on c answering both ways.
      let ferryDir = try temporaryDirectory("ferry-dst")
      let ferry = try await ReceiverProcess.start(
        ["--json", "--yes", "--name", name, "--dir", ferryDir.path], bus: .harness, on: "c")
      defer { ferry.process.signal(SIGKILL) }
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.txt")
      try writeFile(file, size: 100, seed: 3)
      // host a's own avahi-daemon: Ferry peers are visible.
      let environment = ["FERRY_HOME": Harness.freshFerryHome()]
      func send(_ arguments: [String]) async throws -> (Int32?, ChildProcess) {
        let process = try ChildProcess.ferry(
          ["send", "--json", "--timeout", "20"] + arguments + [file.path],
          environment: environment)
        return (await process.waitForExit(timeout: .seconds(60)), process)
      }
      let (ambiguous, first) = try await send(["--localsend", "--to", name])
      #expect(ambiguous == 2, "\(first.stderr)")
      #expect(first.events("error").last?.string("code") == "ambiguous-peer")
      #expect(first.stderr.contains("--protocol localsend"), "\(first.stderr)")
      let (viaLocalSend, second) = try await send(["--protocol", "localsend", "--to", name])
      #expect(viaLocalSend == 0, "\(second.stderr)")
      #expect(second.events("peer-found").first?.string("protocol") == "localsend")
      // Its own announcements were long over: it was found by answering ours, by register to
      // the sender's server (LocalSend 1.18 answers only so).
      #expect(
        await peer.waitForEvent("register-answer") { $0.bool("ok") == true } != nil,
        "\(peer.stdout)")
      #expect(FileManager.default.fileExists(atPath: phoneDir.appendingPathComponent("a.txt").path))
      let (viaFerry, third) = try await send(["--protocol", "ferry", "--to", name])
      #expect(viaFerry == 0, "\(third.stderr)")
      #expect(third.events("peer-found").first?.string("protocol") == "ferry")
      #expect(FileManager.default.fileExists(atPath: ferryDir.appendingPathComponent("a.txt").path))
      peer.signal(SIGKILL)
      ferry.process.signal(SIGKILL)

      let both = LocalSendPeer.alias("Both")
      let bothDir = try temporaryDirectory("ferry-dst")
      let twoWays = try await ReceiverProcess.start(
        ["--json", "--yes", "--localsend", "--name", both, "--dir", bothDir.path], bus: .harness,
        on: "c")
      defer { twoWays.process.signal(SIGKILL) }
      let (sent, fourth) = try await send(["--localsend", "--to", both])
      #expect(sent == 0, "\(fourth.stderr)")
      #expect(fourth.events("peer-found").first?.string("protocol") == "ferry", "\(fourth.stdout)")
      #expect(fourth.stderr.contains("by Ferry and by LocalSend with one key"), "\(fourth.stderr)")
      #expect(FileManager.default.fileExists(atPath: bothDir.appendingPathComponent("a.txt").path))
    }

    @Test("--retry-for: connections reset for 3 s mid-file; what was not delivered goes again")
    func retries() async throws {
      let source = try temporaryDirectory("ls-src")
      let names = (0..<3).map { "f\($0).bin" }
      for (index, name) in names.enumerated() {
        try writeFile(source.appendingPathComponent(name), size: 30 << 20, seed: UInt64(index))
      }
      let destination = try temporaryDirectory("ls-dst")
      let peer = try await receiver(LocalSendPeer.alias("Phone"), into: destination)
      defer { peer.signal(SIGKILL) }
      func on(_ host: String, _ arguments: [String]) async throws {
        _ = try await run(Harness.on!, [host] + arguments)
      }
      // Host a's egress at 50 Mbit (90 MiB take some 15 s), so that the cut comes mid-file even
      // when a loaded machine is slow to put the fault in place.
      try await on(
        "a",
        [
          "tc", "qdisc", "replace", "dev", "mdns0", "root", "tbf", "rate", "50mbit", "burst",
          "256kb", "latency", "100ms",
        ])
      let table = ["nft", "delete", "table", "inet", "lsfault"]
      defer {
        Task {
          try? await on("a", ["tc", "qdisc", "del", "dev", "mdns0", "root"])
          try? await on("b", table)
        }
      }
      // The fault's table and chain beforehand: without a rule they drop nothing, and at fault
      // time one `on` call suffices.
      try await on("b", ["nft", "add", "table", "inet", "lsfault"])
      try await on(
        "b",
        [
          "nft", "add", "chain", "inet", "lsfault", "input",
          "{ type filter hook input priority 0 ; }",
        ])
      let ferry = try ChildProcess.ferry(
        [
          "send", "--localsend", "--json", "--retry-for", "60", "--address",
          "\(Harness.hostAddresses["b"]!):53317",
        ] + names.map { source.appendingPathComponent($0).path },
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      let moving = await ferry.waitForLine {
        $0.contains("\"progress\"") && (jsonObject($0)?["bytes"] as? Int ?? 0) > 20 << 20
      }
      #expect(moving != nil, "\(ferry.stdout)")
      // Every TCP segment to the device's port is answered by a reset, for 3 s.
      try await on(
        "b",
        [
          "nft", "add", "rule", "inet", "lsfault", "input", "tcp", "dport", "53317", "reject",
          "with", "tcp", "reset",
        ])
      try await Task.sleep(for: .seconds(3))
      try await on("b", table)
      #expect(await ferry.waitForExit(timeout: .seconds(90)) == 0, "\(ferry.stderr)")
      #expect(!ferry.events("retrying").isEmpty, "\(ferry.stdout)")
      for name in names {
        #expect(
          try sha256(of: destination.appendingPathComponent(name))
            == sha256(of: source.appendingPathComponent(name)), "\(name)")
      }
      #expect(ferry.events("done").last?.int("stored") == 3, "\(ferry.stdout)")
    }

    @Test("browse --localsend lists a LocalSend device, with no avahi-daemon to ask")
    func browse() async throws {
      let alias = LocalSendPeer.alias("Tablet")
      let peer = try await receiver(alias, into: try temporaryDirectory("ls-dst"))
      defer { peer.signal(SIGKILL) }
      let browse = try ChildProcess.ferry(
        ["browse", "--localsend", "--timeout", "10", "--json"],
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      #expect(await browse.waitForExit() == 0, "\(browse.stderr)")
      let found = browse.events("peer-found").first { $0.string("peer") == alias }
      #expect(found?.string("protocol") == "localsend", "\(browse.stdout)")
      // While it looks, its server (on a port of its own, the one it announces) takes register
      // answers but no files: a device that finds it by its name is declined.
      let lookerName = ProcessInfo.processInfo.hostName  // (browse announces this machine's name)
      // It looks for longer than the device's own search below; the test ends it.
      let looking = try ChildProcess.ferry(
        ["browse", "--localsend", "--timeout", "120", "--json"],
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      defer { looking.signal(SIGKILL) }
      #expect(await looking.waitForEvent("peer-found") != nil)
      let file = try temporaryDirectory("ls-src").appendingPathComponent("a.txt")
      try writeFile(file, size: 10)
      let sender = try LocalSendPeer.start(
        "send",
        ["--to", lookerName, "--discover-seconds", "60", "--expect", "declined", file.path],
        alias: LocalSendPeer.alias("phone"), on: "c")
      // Its search alone may take the 60 s of --discover-seconds on a loaded machine.
      #expect(await sender.waitForExit(timeout: .seconds(120)) == 0, "\(sender.stdout)")
      #expect(found?.string("address") == "\(Harness.hostAddresses["b"]!):53317")
      #expect(browse.stderr.contains("Ferry peers are not visible"))
    }

    @Test("Ctrl-C at ferry send mid-file tells the device (cancel): exit 130, the peer sees it")
    func senderInterrupted() async throws {
      let source = try temporaryDirectory("ls-src").appendingPathComponent("big.bin")
      try writeFile(source, size: 600 << 20)
      let destination = try temporaryDirectory("ls-dst")
      let alias = LocalSendPeer.alias("Phone")
      let peer = try await receiver(alias, into: destination)
      defer { peer.signal(SIGKILL) }
      let ferry = try ChildProcess.ferry(
        ["send", "--localsend", "--json", "--to", alias, source.path],
        environment: TestEnvironment.noBus.merging(["FERRY_HOME": Harness.freshFerryHome()]) {
          $1
        })
      // Some bytes have gone.
      _ = await ferry.waitForEvent("progress") { ($0.int("bytes") ?? 0) > 0 }
      ferry.signal(SIGINT)
      #expect(await ferry.waitForExit() == 130, "\(ferry.stderr)")
      #expect(
        await peer.waitForEvent("session-end") != nil
          || peer.stdout.contains("cancel"), "\(peer.stdout)")
      #expect(
        !FileManager.default.fileExists(atPath: destination.appendingPathComponent("big.bin").path))
    }

    @Test("the receiver cancels mid-file: exit 1, nothing claimed stored")
    func receiverCancels() async throws {
      let source = try temporaryDirectory("ls-src").appendingPathComponent("big.bin")
      try writeFile(source, size: 40 << 20)
      let destination = try temporaryDirectory("ls-dst")
      let alias = LocalSendPeer.alias("Phone")
      let peer = try await receiver(
        alias, into: destination, ["--cancel-after-bytes", "1000000", "--cancel-abort"])
      defer { peer.signal(SIGKILL) }
      let (status, ferry) = try await send(["--to", alias, "--retry-for", "0", source.path])
      #expect(status == 1, "\(ferry.stderr)")
      // --retry-for 0: a cut is not offered again.
      #expect(ferry.events("retrying").isEmpty, "\(ferry.stdout)")
      #expect(ferry.events("file-done").allSatisfy { $0.string("status") != "stored" })
    }
  }
}
