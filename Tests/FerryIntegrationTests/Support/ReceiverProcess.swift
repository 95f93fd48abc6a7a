import Foundation

/// A `ferry receive` a test started, handed back once it said it listens — the one way the
/// tests start a receiving process and wait for it. Readiness is the `advertising` event when
/// the receiver writes NDJSON (`-j`/`--json`; on stderr with `--stdout`), otherwise its banner
/// ("… port N. … Press Ctrl-C to stop."); a receiver that exits or stays silent is killed and
/// the start throws, with what it wrote.
struct ReceiverProcess: Sendable {
  /// Which system bus the receiver sees.
  enum Bus: Sendable {
    /// None (``TestEnvironment/noBus``): it listens, undiscoverable.
    case none
    /// This test process's own (the harness's private daemon, or the namespace host's).
    case harness
  }

  let process: ChildProcess
  /// Its FERRY_HOME.
  let home: String
  /// The port it listens on.
  let port: Int
  /// Its full fingerprint, from the `advertising` event (nil when only the banner was read).
  let fingerprint: String?
  /// Its name as advertised (after any Avahi rename), from the event.
  let name: String?
  /// Whether it is discoverable, from the event.
  let discoverable: Bool?
  /// The `advertising` event itself (nil when only the banner was read).
  let advertising: Observation?
  /// When its readiness was read.
  let readyAt: ContinuousClock.Instant

  /// Starts `ferry receive ARGUMENTS` — inside namespace host `host` when given, under file
  /// mode mask `umask` when given — as `home`, seeing `bus`, with `environment` added last;
  /// returns once it listens.
  ///
  /// - Throws: ``TestFailure`` when it exits or says nothing within `timeout` (it is killed).
  static func start(
    _ arguments: [String], bus: Bus, on host: String? = nil,
    home: String = Harness.freshFerryHome(), environment: [String: String] = [:],
    stdin: String = "/dev/null", terminal: Bool = false, columns: UInt16 = 80,
    umask: String? = nil, timeout: Duration = Harness.patience
  ) async throws -> ReceiverProcess {
    let base = bus == .none ? TestEnvironment.noBus : [:]
    let environment = base.merging(["FERRY_HOME": home]) { $1 }.merging(environment) { $1 }
    let process: ChildProcess
    if let umask {
      process = try ChildProcess(
        "/bin/sh",
        ["-c", "umask \(umask); exec \"$0\" receive \"$@\"", Harness.ferryBinary] + arguments,
        environment: environment, stdin: stdin, terminal: terminal, columns: columns)
    } else {
      process = try ChildProcess.ferry(
        ["receive"] + arguments, on: host, environment: environment, stdin: stdin,
        terminal: terminal, columns: columns)
    }
    let json = arguments.contains("-j") || arguments.contains("--json")
    // NDJSON goes to stderr when stdout carries the received bytes.
    let onStderr = !terminal && arguments.contains("--stdout")
    if json {
      if let event = await process.waitForEvent(
        "advertising", onStderr: onStderr, timeout: timeout),
        let port = event["port"] as? Int
      {
        return ReceiverProcess(
          process: process, home: home, port: port, fingerprint: event["fingerprint"] as? String,
          name: event["name"] as? String, discoverable: event["discoverable"] as? Bool,
          advertising: event, readyAt: event.time)
      }
    } else if let port = await bannerPort(of: process, terminal: terminal, timeout: timeout) {
      return ReceiverProcess(
        process: process, home: home, port: port, fingerprint: nil, name: nil,
        discoverable: nil, advertising: nil, readyAt: .now)
    }
    await process.stop()
    throw TestFailure(
      "ferry receive \(arguments.joined(separator: " ")) did not start: "
        + "\(process.transcript)\(process.stderr)")
  }

  /// The port its banner names, once the banner is out.
  private static func bannerPort(
    of process: ChildProcess, terminal: Bool, timeout: Duration
  ) async -> Int? {
    let banner: String
    if terminal {
      guard await process.waitForText("Press Ctrl-C", timeout: timeout) else { return nil }
      banner = process.transcript
    } else {
      // A message for people: on stderr.
      guard
        let line = await process.waitForLine(
          onStderr: true, timeout: timeout,
          {
            $0.contains("Press Ctrl-C")
          })
      else { return nil }
      banner = line.text
    }
    return banner.firstMatch(of: /port (\d+)\./).flatMap { Int($0.1) }
  }

  /// Stops it (SIGTERM, then SIGKILL) if it still runs.
  func stop() async {
    await process.stop()
  }
}
