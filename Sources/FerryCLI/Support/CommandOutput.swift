import Foundation
import Subprocess

#if canImport(System)
  import System
#else
  import SystemPackage
#endif

/// Runs a helper program (`nft`, `iptables`, `dbus-send`) and reads what it prints, with
/// swift-subprocess (posix_spawn, pipes and a pidfd: no loopback socket, which a firewall
/// dropping loopback traffic — the very thing `ferry doctor` looks for — would block).
enum CommandOutput {
  /// The standard output of `path` with `arguments` (stderr discarded, stdin empty), nil if it
  /// cannot start, exits non-zero, prints more than 4 MiB or takes longer than `timeout` (it
  /// is then killed).
  static func of(
    _ path: String, _ arguments: [String], timeout: Duration = .seconds(5)
  ) async -> String? {
    await withTaskGroup(of: String??.self) { group in
      group.addTask {
        guard
          let result = try? await Subprocess.run(
            .path(FilePath(path)), arguments: Arguments(arguments), input: .none,
            output: .string(limit: 4 << 20), error: .discarded),
          result.terminationStatus.isSuccess
        else { return .some(nil) }
        return .some(result.standardOutput)
      }
      group.addTask {
        try? await Task.sleep(for: timeout)
        return nil
      }
      // The first to end: the program's answer, or the deadline (the program is then
      // cancelled, which kills it).
      let first = await group.next() ?? nil
      group.cancelAll()
      return first ?? nil
    }
  }
}
