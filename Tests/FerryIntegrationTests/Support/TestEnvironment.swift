/// The environments a test's child processes run in.
enum TestEnvironment {
  /// A D-Bus system bus socket that cannot exist.
  static let noBusPath = "/nonexistent/ferry-test-bus"

  /// No system bus: Avahi cannot be reached, so `browse` and `send --to NAME` exit 6, while
  /// `receive` still listens (its `advertising` event says `discoverable: false`) and
  /// `send --address` still works. Not ``Harness/noDaemonBus``: that is a bus without a daemon.
  static let noBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(noBusPath)"]

  /// ``noBus`` with `FERRY_HOME` `home` (a fresh one unless given), then `extra` (which wins).
  static func withoutBus(
    home: String = Harness.freshFerryHome(), _ extra: [String: String] = [:]
  ) -> [String: String] {
    noBus.merging(["FERRY_HOME": home]) { $1 }.merging(extra) { $1 }
  }
}
