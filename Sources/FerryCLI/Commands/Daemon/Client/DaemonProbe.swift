import FerryAPI
import FerryDaemon
import Foundation

/// Whether a `ferry daemon` answers for this user, for `ferry receive`, which says so (and how
/// to stop it) rather than competing with it for senders and ports.
enum DaemonProbe {
  /// The running daemon's status, nil when none answers within a second.
  static func running(socket: String?) async -> Components.Schemas.Status? {
    guard let client = try? DaemonClient(socket: socket, timeout: .seconds(1)),
      FileManager.default.fileExists(atPath: client.path),
      case .ok(let ok)? = try? await client.api.getStatus()
    else { return nil }
    return try? ok.body.json
  }

  /// What `ferry receive` says when a daemon holds this home (`pid`; 0: unknown), its socket
  /// not found.
  static func receivingAlready(pid: Int32) -> CLIFailure {
    CLIFailure(
      status: .usage,
      message: "ferry daemon" + (pid > 0 ? " (pid \(pid))" : "") + " runs for this ferry "
        + "home already, and receives: senders reach it. To run ferry receive instead, stop it "
        + "first ('systemctl --user stop ferry', 'systemctl stop ferry', or 'kill "
        + (pid > 0 ? "\(pid)" : "PID") + "')",
      code: .cannotListen)
  }

  /// What `ferry receive` says when a daemon receives already.
  static func receivingAlready(_ status: Components.Schemas.Status) -> CLIFailure {
    CLIFailure(
      status: .usage,
      message: "ferry daemon (pid \(status.pid)) is receiving for this user already, into "
        + "\(status.receiving.dir): senders reach it. Answer what it asks with 'ferry offers' "
        + "and 'ferry accept ID'; to run ferry receive instead, stop it first "
        + "('systemctl --user stop ferry', or 'kill \(status.pid)')",
      code: .cannotListen)
  }
}
