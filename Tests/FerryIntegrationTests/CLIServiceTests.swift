import Foundation
import Testing

/// `ferry receive` as a service: the shipped systemd units pass `systemd-analyze verify`, the
/// config file is honoured and flags override it, a bad config or folder stops it with exit 2
/// before anything is advertised, `--mkdir` makes the folder. Loopback, --address, no
/// avahi-daemon.
@Suite(
  "ferry receive as a service (config file, folder checks, systemd units)", .timeLimit(.minutes(2)),
  .endsItsProcesses)
struct CLIServiceTests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  /// The unit at `path` with its ExecStart pointed at the built binary, verified.
  func verify(_ path: String, user: Bool) async throws -> (status: Int32, output: String) {
    let text = try String(contentsOf: Self.root.appending(path: path), encoding: .utf8)
      .replacingOccurrences(of: "/usr/local/bin/ferry", with: Harness.ferryBinary)
    let folder = try temporaryDirectory("unit")
    let unit = folder.appendingPathComponent("ferry-receive.service")
    try text.write(to: unit, atomically: true, encoding: .utf8)
    var arguments = ["verify", "--man=no"]
    var environment: [String: String] = [:]
    if user {
      arguments.append("--user")
      // The user manager's runtime folder (there is no session here).
      let runtime = try temporaryDirectory("runtime")
      chmod(runtime.path, 0o700)
      environment["XDG_RUNTIME_DIR"] = runtime.path
    }
    let result = try await run(
      "/usr/bin/systemd-analyze", arguments + [unit.path], environment: environment)
    return (result.status, result.stdout + result.stderr)
  }

  @Test(
    "the system and user units pass systemd-analyze verify",
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")))
  func unitsVerify() async throws {
    let system = try await verify("contrib/systemd/ferry-receive.service", user: false)
    #expect(system.status == 0, "\(system.output)")
    #expect(system.output.isEmpty, "\(system.output)")
    let user = try await verify("contrib/systemd/user/ferry-receive.service", user: true)
    #expect(user.status == 0, "\(user.output)")
    #expect(user.output.isEmpty, "\(user.output)")
  }

  @Test(
    "the daemon's system and user units pass systemd-analyze verify",
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")))
  func daemonUnitsVerify() async throws {
    let system = try await verify("contrib/systemd/ferry.service", user: false)
    #expect(system.status == 0, "\(system.output)")
    #expect(system.output.isEmpty, "\(system.output)")
    let user = try await verify("contrib/systemd/user/ferry.service", user: true)
    #expect(user.status == 0, "\(user.output)")
    #expect(user.output.isEmpty, "\(user.output)")
  }

  /// Starts `ferry receive` with no terminal and returns it with its port.
  func startReceiver(_ arguments: [String], home: String, environment: [String: String] = [:])
    async throws -> (process: ChildProcess, port: Int)
  {
    let receiver = try await ReceiverProcess.start(
      ["-j"] + arguments, bus: .none, home: home, environment: environment)
    return (receiver.process, receiver.port)
  }

  func send(_ file: URL, port: Int) async throws -> (status: Int32, stdout: String, stderr: String)
  {
    try await run(
      Harness.ferryBinary,
      ["send", "-j", "--retry-for", "0", "--address", "127.0.0.1:\(port)", file.path],
      environment: TestEnvironment.withoutBus())
  }

  @Test("config.toml in FERRY_HOME is honoured with no flags; --dir and --port override it")
  func configHonoured() async throws {
    let home = Harness.freshFerryHome()
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    try """
    # written by the test
    [receive]
    dir = "inbox/nested"   # relative to this file's folder
    mkdir = true
    name = "service box"
    accept = "yes"
    on_conflict = "skip"
    """.write(
      to: URL(fileURLWithPath: home).appendingPathComponent("config.toml"), atomically: true,
      encoding: .utf8)
    // The config lives in FERRY_HOME; its relative dir is taken from there.
    let expected = URL(fileURLWithPath: home).appendingPathComponent("inbox/nested").path
    let file = try temporaryDirectory("service-src").appendingPathComponent("note.txt")
    try writeFile(file, size: 500)

    let (receiver, port) = try await startReceiver(["--once"], home: home)
    defer { receiver.signal(SIGKILL) }
    #expect(receiver.stdout.contains("service box"), "\(receiver.stdout)")
    let sent = try await send(file, port: port)
    #expect(sent.status == 0, "\(sent.stderr)")
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 0, "\(receiver.stderr)")
    #expect(
      try sha256(of: URL(fileURLWithPath: expected).appendingPathComponent("note.txt"))
        == sha256(of: file))

    // Flags win: another folder and a fixed port.
    let other = try temporaryDirectory("service-flag")
    let fixed = Int.random(in: 40_000..<50_000)
    let (second, secondPort) = try await startReceiver(
      ["--once", "--dir", other.path, "--port", "\(fixed)"], home: home)
    defer { second.signal(SIGKILL) }
    #expect(secondPort == fixed)
    #expect(try await send(file, port: secondPort).status == 0)
    #expect(await second.waitForExit(timeout: Harness.patience) == 0, "\(second.stderr)")
    #expect(FileManager.default.fileExists(atPath: other.appendingPathComponent("note.txt").path))
  }

  @Test("--config and FERRY_CONFIG name the file; a mistake is exit 2 naming file and line")
  func badConfig() async throws {
    let folder = try temporaryDirectory("service-bad")
    let config = folder.appendingPathComponent("ferry.toml")
    try "[receive]\naccept = \"trusted\"\naccept_form = [\"9F2C41AB0C3D7E11\"]\n".write(
      to: config, atomically: true, encoding: .utf8)
    for (arguments, environment) in [
      (["--config", config.path], [String: String]()), ([], ["FERRY_CONFIG": config.path]),
    ] {
      let result = try await run(
        Harness.ferryBinary, ["receive", "-j", "-d", folder.path] + arguments,
        environment: TestEnvironment.withoutBus()
          .merging(environment) { $1 })
      #expect(result.status == 2, "\(result.stderr)")
      #expect(
        result.stderr.contains("\(config.path):3: unknown key 'accept_form'"), "\(result.stderr)")
      #expect(!result.stdout.contains("advertising"), "\(result.stdout)")
      let error = result.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }
        .first { $0["event"] as? String == "error" }
      #expect(error?["code"] as? String == "invalid-config", "\(result.stdout)")
    }
    let missing = try await run(
      Harness.ferryBinary,
      ["receive", "--yes", "--config", folder.appendingPathComponent("none.toml").path],
      environment: TestEnvironment.withoutBus())
    #expect(missing.status == 2)
    #expect(missing.stderr.contains("none.toml: no such file or directory"), "\(missing.stderr)")
  }

  @Test("the folder is checked before advertising: missing (--mkdir makes it), read-only, a file")
  func folderChecks() async throws {
    let base = try temporaryDirectory("service-dir")
    func receive(_ arguments: [String]) async throws -> (
      status: Int32, stdout: String, stderr: String
    ) {
      try await run(
        Harness.ferryBinary, ["receive", "--yes", "--once", "-j"] + arguments,
        environment: TestEnvironment.withoutBus(),
        timeout: Harness.patience)
    }
    let missing = base.appendingPathComponent("a/b")
    let absent = try await receive(["-d", missing.path])
    #expect(absent.status == 2, "\(absent.stderr)")
    #expect(absent.stderr.contains("does not exist (--mkdir creates it)"), "\(absent.stderr)")
    #expect(!absent.stdout.contains("advertising"))

    let plain = base.appendingPathComponent("plain.txt")
    try writeFile(plain, size: 1)
    let notFolder = try await receive(["-d", plain.path])
    #expect(notFolder.status == 2)
    #expect(notFolder.stderr.contains("is not a folder"), "\(notFolder.stderr)")

    // Read-only: a read-only bind mount in a mount namespace of its own (root ignores modes;
    // nothing outside that process sees the mount).
    let locked = base.appendingPathComponent("locked")
    try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: false)
    let readOnly = try await run(
      "/usr/bin/unshare",
      [
        "-m", "--propagation", "private", "/bin/sh", "-c",
        "mount --bind -o ro \"$1\" \"$1\" && exec \"$2\" receive --yes --once -j -d \"$1\"",
        "sh", locked.path, Harness.ferryBinary,
      ],
      environment: TestEnvironment.withoutBus(),
      timeout: Harness.patience)
    #expect(readOnly.status == 2, "\(readOnly.stderr)")
    #expect(readOnly.stderr.contains("read-only filesystem"), "\(readOnly.stderr)")
    #expect(!readOnly.stdout.contains("advertising"))

    // --mkdir makes a/b, then receives into it.
    let home = Harness.freshFerryHome()
    let (receiver, port) = try await startReceiver(
      ["--yes", "--once", "--mkdir", "-d", missing.path], home: home)
    defer { receiver.signal(SIGKILL) }
    let file = try temporaryDirectory("service-dir-src").appendingPathComponent("x.bin")
    try writeFile(file, size: 2000)
    #expect(try await send(file, port: port).status == 0)
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 0, "\(receiver.stderr)")
    #expect(FileManager.default.fileExists(atPath: missing.appendingPathComponent("x.bin").path))
  }

  /// A sparse 10 TiB file in a new folder named after `folder`: announced in full, nothing on
  /// disk.
  static func hugeSparseFile(_ folder: String) throws -> URL {
    let file = try temporaryDirectory(folder).appendingPathComponent("huge.img")
    _ = FileManager.default.createFile(atPath: file.path, contents: nil)
    let handle = try FileHandle(forWritingTo: file)
    try handle.truncate(atOffset: 10 << 40)
    try handle.close()
    return file
  }

  @Test("an invitation larger than the free space is declined before anyone is asked (exit 4)")
  func tooLarge() async throws {
    let file = try Self.hugeSparseFile("service-huge")
    defer { try? FileManager.default.removeItem(at: file) }
    let destination = try temporaryDirectory("service-huge-dst")
    let (receiver, port) = try await startReceiver(
      ["--yes", "-d", destination.path], home: Harness.freshFerryHome())
    defer { receiver.signal(SIGKILL) }
    let sent = try await send(file, port: port)
    #expect(sent.status == 4, "\(sent.stderr)")
    #expect(
      sent.stderr.contains("not enough space: 11 TB offered,")
        && sent.stderr.contains("free on the receiver"), "\(sent.stderr)")
    #expect(await receiver.waitForEvent("declined") != nil, "\(receiver.stdout)")
    #expect(!receiver.stdout.contains("\"accepted\""), "\(receiver.stdout)")
  }

  @Test("--yes --once: an invitation larger than the free space ends the run, exit 1, not a hang")
  func tooLargeOnce() async throws {
    let file = try Self.hugeSparseFile("service-huge-once")
    defer { try? FileManager.default.removeItem(at: file) }
    let (receiver, port) = try await startReceiver(
      ["--yes", "--once", "-d", try temporaryDirectory("service-huge-once-dst").path],
      home: Harness.freshFerryHome())
    defer { receiver.signal(SIGKILL) }
    let sent = try await send(file, port: port)
    #expect(sent.status == 4, "\(sent.stderr)")
    #expect(await receiver.waitForExit(timeout: Harness.patience) == 1, "\(receiver.stderr)")
    let events = receiver.stdoutLines.compactMap { jsonObject($0.text) }
    #expect(events.contains { $0["event"] as? String == "declined" }, "\(receiver.stdout)")
    #expect(
      events.contains { $0["event"] as? String == "error" && $0["code"] as? String == "refused" },
      "\(receiver.stdout)")
  }
}
