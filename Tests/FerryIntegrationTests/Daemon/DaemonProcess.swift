import Foundation
import Testing

/// A `ferry daemon` a test started on this host (host a), with a home, runtime folder and
/// config of its own; and the commands that talk to it, as the same user.
struct DaemonProcess: Sendable {
  let process: ChildProcess
  /// Its FERRY_HOME (identity, outbox, history).
  let home: String
  /// Its XDG_RUNTIME_DIR (the API's socket is `ferry/api.sock` in it).
  let runtime: String
  /// Its config file.
  let config: String

  /// The environment every process talking to it has.
  var environment: [String: String] { ["FERRY_HOME": home, "XDG_RUNTIME_DIR": runtime] }
  /// The API's socket.
  var socket: String { runtime + "/ferry/api.sock" }

  /// A config receiving into `destination` as `name`, with `extra` lines in `[receive]`.
  static func config(
    destination: URL, name: String, extra: [String] = [], daemon: [String] = ["notify = false"]
  ) throws -> String {
    let folder = try temporaryDirectory("daemon-config")
    let path = folder.appendingPathComponent("config.toml").path
    let text =
      (["[receive]", "dir = \"\(destination.path)\"", "name = \"\(name)\""] + extra
      + ["[daemon]"] + daemon).joined(separator: "\n") + "\n"
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return path
  }

  /// Starts `ferry daemon --config config` as `home` with `runtime`; returns once its API
  /// answers.
  ///
  /// - Throws: ``TestFailure`` when it exits or says nothing within the patience.
  static func start(
    config: String, home: String = Harness.freshFerryHome(), runtime: String? = nil,
    environment: [String: String] = [:]
  ) async throws -> DaemonProcess {
    let runtime = try runtime ?? temporaryDirectory("daemon-run").path
    let process = try ChildProcess.ferry(
      ["daemon", "--config", config],
      environment: ["FERRY_HOME": home, "XDG_RUNTIME_DIR": runtime].merging(environment) { $1 })
    let ready = await process.waitForLine(onStderr: true) { $0.contains("API at ") }
    guard ready != nil else {
      await process.stop()
      throw TestFailure("ferry daemon did not start: \(process.stderr)")
    }
    return DaemonProcess(process: process, home: home, runtime: runtime, config: config)
  }

  /// `ferry ARGUMENTS` as the daemon's user (its home and runtime folder), to its end.
  func ferry(_ arguments: [String], timeout: Duration = Harness.patience) async throws
    -> (status: Int32?, stdout: String, stderr: String)
  {
    let child = try ChildProcess.ferry(arguments, environment: environment)
    let status = await child.waitForExit(timeout: timeout)
    return (status, child.stdout, child.stderr)
  }

  /// `ferry events --json --since 0`, following.
  func events() throws -> ChildProcess {
    try ChildProcess.ferry(["events", "--json", "--since", "0"], environment: environment)
  }

  /// The fingerprint of the identity in `home` (made if need be).
  static func fingerprint(home: String) async throws -> String {
    let child = try ChildProcess.ferry(["identity", "--json"], environment: ["FERRY_HOME": home])
    #expect(await child.waitForExit() == 0, "\(child.stderr)")
    let event = try #require(child.events("identity").first, "\(child.stdout)")
    return try #require(event["fingerprint"] as? String)
  }
}
