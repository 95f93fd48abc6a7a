import Foundation
import Testing

/// What scripts/harness/*.sh exported for this test process. Tests that need a piece of the
/// harness are disabled, with the reason shown as skipped, when it is absent.
enum Harness {
  static let environment = ProcessInfo.processInfo.environment

  /// The bus of the private loopback avahi-daemon (scripts/harness/local.sh), when this process
  /// uses it.
  static var localBus: String? {
    guard let bus = environment["FERRY_TEST_LOCAL_BUS"],
      environment["DBUS_SYSTEM_BUS_ADDRESS"] == bus
    else { return nil }
    return bus
  }

  /// The script that restarts the loopback avahi-daemon.
  static var restartAvahi: String? { environment["FERRY_TEST_RESTART_AVAHI"] }

  /// Whether the temporary folder's filesystem keeps user extended attributes, which a
  /// receiver needs to recognise the files a sender already sent it (tmpfs before Linux 6.6
  /// does not). Checked once, with Python's os.setxattr.
  static let keepsUserAttributes: Bool = {
    let probe = NSTemporaryDirectory() + "/ferry-xattr-probe-\(UUID().uuidString)"
    guard FileManager.default.createFile(atPath: probe, contents: Data()) else { return false }
    defer { try? FileManager.default.removeItem(atPath: probe) }
    let python = Process()
    python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    python.arguments = [
      "-c", "import os, sys; os.setxattr(sys.argv[1], 'user.ferry.probe', b'1')", probe,
    ]
    python.standardError = FileHandle.nullDevice
    do {
      try python.run()
      python.waitUntilExit()
    } catch {
      return false
    }
    return python.terminationStatus == 0
  }()

  /// A bus with no avahi-daemon on it.
  static var noDaemonBus: String? { environment["FERRY_TEST_NO_DAEMON_BUS"] }

  /// Whether this process itself talks to the bus that has no avahi-daemon (a separate test
  /// run: libdbus reads the bus address once per process).
  static var inNoDaemonProcess: Bool {
    guard let bus = noDaemonBus else { return false }
    return environment["DBUS_SYSTEM_BUS_ADDRESS"] == bus
  }

  /// The `on` script of scripts/harness/hosts.sh: `on HOST cmd...`.
  static var on: String? { environment["FERRY_TEST_ON"] }

  /// The host this process runs in, when hosts.sh started it inside one (`FERRY_TEST_HOST`).
  static var currentHost: String? { environment["FERRY_TEST_HOST"] }

  /// Host name → IPv4 address, from `FERRY_TEST_HOSTS` ("a=10.213.0.1 b=…").
  static var hostAddresses: [String: String] {
    var result: [String: String] = [:]
    for pair in (environment["FERRY_TEST_HOSTS"] ?? "").split(separator: " ") {
      let parts = pair.split(separator: "=", maxSplits: 1)
      if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
    }
    return result
  }

  /// The built `ferry` binary: `FERRY_BIN`, or the one beside this test bundle.
  static var ferryBinary: String {
    if let path = environment["FERRY_BIN"] { return path }
    let testBundle = URL(fileURLWithPath: CommandLine.arguments[0])
    let directory = testBundle.deletingLastPathComponent()
    return directory.appendingPathComponent("ferry").path
  }

  /// How long a test waits for what it needs before it can assert anything — a process to
  /// start, a prompt or an event to appear, a port to listen, an exit: no promise of the
  /// product's, so as long as a loaded two-core machine may take. A wait ends the moment it is
  /// met (or when the output it reads closes), so a passing test never waits this long; a
  /// failing one says so within its suite's time limit.
  static let patience: Duration = .seconds(60)

  /// What a test allows beyond a time the product promises (a `--timeout`, an invitation's
  /// expiry, a reaction "at once"), for starting and ending processes on a loaded two-core
  /// machine: with both cores kept busy and four tests at a time, a debug-built `ferry` took
  /// up to 3 s to start and exit (13 s when all 84 CLI tests started at once). A promise is
  /// asserted as "not before it, and not later than it plus this".
  static let margin: Duration = .seconds(10)

  /// A FERRY_HOME for the children of this test process.
  static let testFerryHome = NSTemporaryDirectory() + "ferry-test-home-\(getpid())"

  /// A fresh, empty FERRY_HOME.
  static func freshFerryHome() -> String {
    NSTemporaryDirectory() + "ferry-home-\(UUID().uuidString)"
  }

  /// The built `ferry-test-peer` binary, beside `ferry`.
  static var testPeerBinary: String {
    URL(fileURLWithPath: ferryBinary).deletingLastPathComponent()
      .appendingPathComponent("ferry-test-peer").path
  }

  /// A service type no other test uses, so tests sharing a daemon do not see each other.
  static func uniqueServiceType(_ prefix: String = "t") -> String {
    let letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    let suffix = String((0..<8).map { _ in letters.randomElement()! })
    return "\(prefix)\(suffix)"
  }
}

/// Traits for suites that need the harness.
extension Trait where Self == ConditionTrait {
  /// Requires the loopback avahi-daemon of scripts/harness/local.sh.
  static var needsLocalAvahi: Self {
    .enabled(
      if: Harness.localBus != nil,
      "needs the private avahi-daemon of scripts/harness/local.sh (run scripts/test)")
  }

  /// Requires the namespace hosts of scripts/harness/hosts.sh.
  static var needsHosts: Self {
    .enabled(
      if: Harness.on != nil,
      "needs the namespace hosts of scripts/harness/hosts.sh (run scripts/test)")
  }

  /// Requires running inside host `a` of scripts/harness/hosts.sh.
  static var needsToRunOnHostA: Self {
    .enabled(
      if: Harness.on != nil && Harness.currentHost == "a",
      "needs to run inside host a of scripts/harness/hosts.sh (run scripts/test)")
  }

  /// Requires the test run of its own that scripts/test gives the independent hostile peer
  /// (`FERRY_TEST_HOSTILE=1`, run 1c): its floods and memory measurements must not compete with
  /// the other tests for the machine's cores.
  static var needsHostileRun: Self {
    .enabled(
      if: Harness.environment["FERRY_TEST_HOSTILE"] == "1",
      "belongs to the hostile-peer run of scripts/test (FERRY_TEST_HOSTILE=1)")
  }

  /// Requires a test process whose bus has no avahi-daemon.
  static var needsNoDaemonProcess: Self {
    .enabled(
      if: Harness.inNoDaemonProcess,
      "needs a test process on a bus without avahi-daemon (scripts/test runs one)")
  }
}
