import Ferry
import Foundation
import Testing

/// The independent hostile peer, Tests/Hostile/hostile_peer.py: Python 3's standard library
/// only, written from docs/PROTOCOL.md, sharing no code with Ferry.
enum HostilePeer {
  /// The script, found beside this source file (tests run from the repository).
  static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Hostile/hostile_peer.py").path

  /// The system's Python 3 (Debian's, so nothing but its standard library is there).
  static var python: String {
    FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
      ? "/usr/bin/python3" : "python3"
  }

  /// Runs `attack 127.0.0.1 PORT SCENARIO OPTIONS...` and returns the JSON lines it printed.
  static func attack(
    port: Int, _ scenario: String, _ options: [String] = [], home: String = freshHome(),
    name: String? = nil, timeout: Duration = .seconds(90)
  ) async throws -> [Observation] {
    var environment = ["HOSTILE_HOME": home]
    if let name { environment["HOSTILE_NAME"] = name }
    let result = try await run(
      python, [script, "attack", "127.0.0.1", "\(port)", scenario] + options,
      environment: environment, timeout: timeout)
    let lines = result.stdout.split(separator: "\n").map { Observation(line: String($0)) }
    if result.status != 0 {
      Issue.record("hostile_peer.py \(scenario) exited \(result.status): \(result.stderr)")
    }
    return lines
  }

  /// Starts `attack 127.0.0.1 PORT SCENARIO OPTIONS...` and returns the running process, for
  /// scenarios whose lines matter while they run.
  static func start(
    port: Int, _ scenario: String, _ options: [String] = [], home: String = freshHome()
  ) throws -> ChildProcess {
    try ChildProcess(
      python, ["-u", script, "attack", "127.0.0.1", "\(port)", scenario] + options,
      environment: ["HOSTILE_HOME": home])
  }

  /// Starts `serve MODE OPTIONS...` (a hostile receiver) and waits for its `listening` line;
  /// returns the process, its port and its fingerprint.
  static func serve(_ mode: String, _ options: [String] = [], home: String = freshHome())
    async throws
    -> (process: ChildProcess, port: Int, fingerprint: String)
  {
    let process = try ChildProcess(
      python, ["-u", script, "serve", mode] + options, environment: ["HOSTILE_HOME": home])
    let listening = await process.waitForLine {
      jsonObject($0)?["event"] as? String == "listening"
    }
    let fields = try #require(listening.flatMap { jsonObject($0.text) }, "\(process.stderr)")
    return (
      process, try #require(fields["port"] as? Int), try #require(fields["fingerprint"] as? String)
    )
  }

  /// Starts `relay TARGET-PORT` (a man in the middle between a sender and the receiver on
  /// `target`, relaying `connections` connections in turn) and waits for its `listening` line;
  /// returns the process, its port and its fingerprint. `senderKey` is the sender's fingerprint,
  /// which the relay needs to derive the sender's code.
  static func relay(target: Int, senderKey: String, connections: Int, home: String = freshHome())
    async throws -> (process: ChildProcess, port: Int, fingerprint: String)
  {
    let process = try ChildProcess(
      python,
      [
        "-u", script, "relay", "\(target)", "--peer-fingerprint", senderKey, "--connections",
        "\(connections)",
      ], environment: ["HOSTILE_HOME": home])
    let listening = await process.waitForLine {
      jsonObject($0)?["event"] as? String == "listening"
    }
    let fields = try #require(listening.flatMap { jsonObject($0.text) }, "\(process.stderr)")
    return (
      process, try #require(fields["port"] as? Int), try #require(fields["fingerprint"] as? String)
    )
  }

  /// The hostile peer's identity in `home`: (fingerprint, certificate path).
  static func identity(home: String) async throws -> (fingerprint: String, certificate: String) {
    let result = try await run(python, [script, "identity"], environment: ["HOSTILE_HOME": home])
    let fields = try #require(jsonObject(result.stdout.trimmingCharacters(in: .newlines)))
    return (
      try #require(fields["fingerprint"] as? String), try #require(fields["cert"] as? String)
    )
  }

  /// A fresh folder for an identity.
  static func freshHome() -> String {
    NSTemporaryDirectory() + "hostile-\(UUID().uuidString)"
  }

  /// Hex of a path's UTF-8 bytes, as the script's `--paths` wants it.
  static func hex(_ path: String) -> String {
    path.utf8.map { String(format: "%02x", $0) }.joined()
  }
}

/// A `ferry receive` attacked by the hostile peer: its destination is `dest` inside a folder of
/// its own, so that anything written outside it shows.
struct AttackedReceiver {
  let parent: URL
  let destination: URL
  let process: ChildProcess
  let home: String
  let port: Int
  let fingerprint: String
  /// The FERRY_HOME of the proper sender that checks the receiver still works (accepted by an
  /// `--accept-from` receiver too).
  let properHome: String

  /// Starts `ferry receive ARGUMENTS --dir DEST --port N` (JSON events on stdout unless
  /// `terminal`); `umask` runs it under that file mode mask.
  static func start(
    _ arguments: [String] = ["--yes", "--json"], terminal: Bool = false, home: String? = nil,
    umask: String? = nil, prepare: (URL) throws -> Void = { _ in }
  ) async throws -> AttackedReceiver {
    let parent = try temporaryDirectory("attacked")
    let destination = parent.appendingPathComponent("dest")
    try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
    try prepare(destination)
    let home = home ?? Harness.freshFerryHome()
    let properHome = Harness.freshFerryHome()
    let proper = try await run(
      Harness.ferryBinary, ["identity", "--json"], environment: ["FERRY_HOME": properHome])
    let properKey = try #require(
      jsonObject(proper.stdout.trimmingCharacters(in: .newlines))?["fingerprint"] as? String)
    let policy = arguments.contains("--accept-from") ? ["--accept-from", properKey] : []
    let receiver = try await ReceiverProcess.start(
      arguments + policy + [
        "--dir", destination.path, "--port", "0", "--service", Harness.uniqueServiceType(),
        "--name", "victim",
      ], bus: .harness, home: home, terminal: terminal, umask: umask)
    var fingerprint = receiver.fingerprint
    if fingerprint == nil {
      // Only the banner was read (no NDJSON): its identity says.
      let identity = try await run(
        Harness.ferryBinary, ["identity", "--json"], environment: ["FERRY_HOME": home])
      fingerprint =
        jsonObject(identity.stdout.trimmingCharacters(in: .newlines))?["fingerprint"]
        as? String
    }
    return AttackedReceiver(
      parent: parent, destination: destination, process: receiver.process, home: home,
      port: receiver.port, fingerprint: try #require(fingerprint), properHome: properHome)
  }

  /// Waits until the terminal has shown `count` questions in all, the last one's
  /// `Accept? [y/N]` included: what is typed before a question's prompt shows is discarded.
  func waitForPrompts(_ count: Int, timeout: Duration = Harness.patience) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      // Each question prints its verification code once (the prompt line is redrawn).
      let parts = process.transcript.components(separatedBy: "Verification code:")
      if parts.count > count, parts[count].contains("Accept? [y/N]") { return true }
      try? await Task.sleep(for: .milliseconds(50))
    }
    return false
  }

  /// The JSON events it printed so far.
  var events: [[String: Any]] { process.stdoutLines.compactMap { jsonObject($0.text) } }

  /// Its peak resident memory so far, in MiB (VmHWM).
  var peakMemoryMiB: Int { memoryKiB("VmHWM:") / 1024 }

  /// Its resident memory now, in KiB (VmRSS).
  var residentMemoryKiB: Int { memoryKiB("VmRSS:") }

  private func memoryKiB(_ field: String) -> Int {
    guard
      let status = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
      let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kilobytes
  }

  /// Everything below the destination's parent except the destination itself: must stay empty.
  var outside: [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []).filter {
      $0 != "dest"
    }
  }

  /// What the destination holds (staging excluded).
  var received: [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: destination.path)) ?? []).filter {
      $0 != ".ferry-partial"
    }.sorted()
  }

  /// After an attack: nothing outside DEST, the process alive, its memory bounded, and a proper
  /// `ferry send` (pinned to its key) delivered.
  func expectUnharmed(_ what: String, memoryMiB: Int = 200) async throws {
    #expect(outside.isEmpty, "\(what): written outside DEST: \(outside)")
    #expect(process.isRunning, "\(what): receive died: \(process.stderr)")
    #expect(peakMemoryMiB < memoryMiB, "\(what): receive peaked at \(peakMemoryMiB) MiB")
    let source = try temporaryDirectory("proper")
    let file = source.appendingPathComponent("proper-\(UUID().uuidString.prefix(8)).txt")
    try writeFile(file, size: 20_000, seed: 3)
    let sent = try await run(
      Harness.ferryBinary,
      [
        "send", "--address", "127.0.0.1:\(port)", "--to", String(fingerprint.prefix(16)),
        "--timeout", "20", file.path,
      ],
      environment: ["FERRY_HOME": properHome])
    #expect(sent.status == 0, "\(what): a proper send afterwards failed: \(sent.stderr)")
    let arrived = destination.appendingPathComponent(file.lastPathComponent)
    #expect(
      (try? sha256(of: arrived)) == (try sha256(of: file)),
      "\(what): the proper send did not arrive whole")
  }
}

/// Bytes a terminal would act on (ESC, BEL, CSI) or bidirectional overrides: never shown raw.
func rawControls(in text: String) -> [String] {
  text.unicodeScalars.filter {
    ($0.value < 0x20 && $0 != "\n" && $0 != "\r" && $0 != "\t" && $0 != "\u{1B}")
      || [0x07, 0x9B, 0x202E, 0x202D, 0x2066, 0x2067, 0x2068, 0x200B, 0x2028, 0x2029].contains(
        $0.value)
  }.map { String(format: "U+%04X", $0.value) }
}

/// ESC characters in `text` that do not start one of the progress bar's own cursor moves.
func foreignEscapes(in text: String) -> Int {
  let own = text.replacing(#/\x1B\[(\d+A|J|K)/#, with: "")
  return own.unicodeScalars.filter { $0 == "\u{1B}" }.count
}
