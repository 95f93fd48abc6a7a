import Foundation
import Testing

extension LocalSendTests {
  /// The hostile LocalSend client (Tests/Hostile/localsend_hostile.py, written from the
  /// protocol's README) on host c against `ferry receive --localsend` on host a: the receiver
  /// lives, writes nothing outside its folder, refuses what it must, and an honest sender on
  /// host b still gets through.
  @Suite(
    "A hostile LocalSend client against ferry receive --localsend", .timeLimit(.minutes(5)),
    .endsItsProcesses)
  struct HostileLocalSendTests {
    static var script: String {
      URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Hostile/localsend_hostile.py").path
    }

    /// The resident memory of process `pid`, in MB (VmRSS).
    static func residentMegabytes(of pid: pid_t) -> Int {
      let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
      let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
      return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }

    /// Runs attack `name` from host c; its JSON lines.
    func attack(_ name: String, _ arguments: [String] = [], timeout: Duration = .seconds(90))
      async throws -> [Observation]
    {
      let home = NSTemporaryDirectory() + "localsend-hostile-\(UUID().uuidString)"
      let process = try ChildProcess(
        Harness.on!,
        [
          "c", "python3", Self.script, name, "--address", "\(Harness.hostAddresses["a"]!):53317",
          "--home", home,
        ] + arguments)
      #expect(await process.waitForExit(timeout: timeout) == 0, "\(name): \(process.stderr)")
      return process.stdoutLines.map { Observation(line: $0.text) }
    }

    /// `ferry receive --localsend --yes` on host a into a fresh folder inside a fresh parent
    /// (so that anything written beside it shows).
    func receiver() async throws -> (ChildProcess, URL) {
      let parent = try temporaryDirectory("ls-hostile")
      let destination = parent.appendingPathComponent("inbox")
      try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
      let process = try ChildProcess.ferry(
        [
          "receive", "--localsend", "--yes", "--json", "--name", LocalSendPeer.alias("rx"),
          "--dir", destination.path,
        ],
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
      "traversal names, oversize JSON, too many files, a claimed key, uploads that never read their answer, no certificate"
    )
    func refusals() async throws {
      let (ferry, destination) = try await receiver()
      defer { ferry.signal(SIGKILL) }
      for result in try await attack("traversal") {
        let status = result.int("status")
        #expect(status == 400 || status == 200, "\(result)")
        // Accepted only as a name inside the folder (a look-alike slash, a backslash, '%2e').
        if status == 200 {
          #expect(result.string("name")?.hasPrefix("/") == false)
        }
      }
      #expect(!FileManager.default.fileExists(atPath: "/tmp/evil-abs"))
      let parent = destination.deletingLastPathComponent()
      #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path) == ["inbox"])
      #expect(
        try FileManager.default.subpathsOfDirectory(atPath: destination.path)
          .filter { !$0.hasPrefix(".ferry-partial") }.allSatisfy { !$0.contains("evil") })

      let sizes = try await attack("oversize-json")
      #expect(sizes.map { $0.int("status") } == [413, 413, 400], "\(sizes)")
      let claims = try await attack("claim")
      #expect(claims.map { $0.int("status") } == [403, 403], "\(claims)")
      // Uploads whose connection closed before their answer give their places back: the
      // session's next files are taken, not refused as too many at once for ever.
      let runs = try await attack("hit-and-run")
      #expect(runs.first?.int("prepared") == 200, "\(runs)")
      let honest = (runs.first?.fields["honest"] as? [Any])?.map { "\($0)" }
      #expect(honest == ["200", "200"], "\(runs)")
      let noCertificate = try await attack("no-cert")
      #expect(noCertificate.first?.int("status") == nil, "\(noCertificate)")
      #expect(ferry.isRunning, "\(ferry.stderr)")

      // Requests pipelined for 15 s, no answer read: the answers do not pile up.
      let pipelined = try await attack("pipeline")
      let rss = Self.residentMegabytes(of: ferry.pid)
      #expect(rss < 150, "\(rss) MB resident after \(pipelined)")
      #expect(ferry.isRunning, "\(ferry.stderr)")
    }

    @Test(
      "a trickled head or JSON body is cut within the 10 s deadline; 500 idle connections are capped and closed, and an honest sender gets through meanwhile"
    )
    func slowAndIdle() async throws {
      let (ferry, destination) = try await receiver()
      defer { ferry.signal(SIGKILL) }
      async let head = attack("trickle-head")
      async let json = attack("trickle-json")
      for result in try await head + json {
        let after = try #require(result.fields["closedAfter"] as? Double, "\(result)")
        // The 10 s deadline, plus what a loaded machine adds (the trickle notices at its next
        // byte, 0.5 s later).
        #expect(after < 10 + seconds(Harness.margin), "\(result)")
      }
      async let idle = attack("idle", ["--hold", "35"])
      try await Task.sleep(for: .seconds(5))
      let file = try temporaryDirectory("ls-src").appendingPathComponent("honest.txt")
      try writeFile(file, size: 1000)
      let honest = try LocalSendPeer.start(
        "send", ["--address", "\(Harness.hostAddresses["a"]!):53317", file.path],
        alias: LocalSendPeer.alias("phone"))
      #expect(await honest.waitForExit(timeout: .seconds(60)) == 0, "\(honest.stdout)")
      #expect(
        FileManager.default.fileExists(
          atPath: destination.appendingPathComponent("honest.txt").path))
      let results = try await idle
      let opened = try #require(results.first { $0.string("attack") == "idle-open" })
      #expect((opened.int("held") ?? 500) <= 16, "\(opened)")
      let after = try #require(results.first { $0.string("attack") == "idle-after" })
      #expect(after.int("alive") == 0, "\(after)")
      #expect(ferry.isRunning, "\(ferry.stderr)")
    }
  }
}
