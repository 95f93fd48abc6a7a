import Ferry
import Logging

/// Where the library's log lines go: nowhere by default; stderr with `-v` (debug level) or
/// `FERRY_LOG=LEVEL`.
enum LogSetup {
  /// Sets ``FerryLogging/logger`` from `-v` and the `FERRY_LOG` environment variable.
  ///
  /// - Throws: ``CLIFailure`` (usage) when `FERRY_LOG` names no level.
  static func configure(verbose: Bool, environment: String?) throws(CLIFailure) {
    var level: Logger.Level? = verbose ? .debug : nil
    if let environment, !environment.isEmpty {
      guard let named = Logger.Level(rawValue: environment.lowercased()) else {
        throw CLIFailure(
          status: .usage,
          message: "FERRY_LOG=\(environment) is not a level: use trace, debug, info, notice, "
            + "warning or error",
          code: .invalidChoice)
      }
      level = named
    }
    guard let level else { return }
    FerryLogging.logger = Logger(label: "ferry") { _ in TerminalLogHandler(logLevel: level) }
  }
}
