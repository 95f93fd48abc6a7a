import ArgumentParser
import Foundation

/// Entry point: runs the command and maps every error to the brief's exit codes (argument
/// parsing errors exit 2, not ArgumentParser's default 64).
@main
enum FerryMain {
  static func main() async {
    let status: Int32
    var json = false
    do {
      var command = try FerryCommand.parseAsRoot()
      json = (command as? any ReportingCommand)?.reportsJSON ?? false
      try LogSetup.configure(
        verbose: (command as? any LoggingCommand)?.logging.verbose ?? false,
        environment: ProcessInfo.processInfo.environment["FERRY_LOG"])
      if var command = command as? any AsyncParsableCommand {
        try await command.run()
      } else {
        try command.run()
      }
      status = ExitStatus.success.rawValue
    } catch let failure as CLIFailure {
      // After Ctrl-C, what failed is the interruption's doing: the signal handler reports it.
      if !Interrupts.wasInterrupted {
        EventWriter(json: json).failure(failure)
      }
      status = failure.status.rawValue
    } catch {
      let code = FerryCommand.exitCode(for: error)
      let message = FerryCommand.fullMessage(for: error)
      if code == .success {
        if !message.isEmpty { StandardStream.output.write(message + "\n") }
        status = 0
      } else {
        if !message.isEmpty { StandardStream.error.write(message + "\n") }
        status = code == .validationFailure ? ExitStatus.usage.rawValue : code.rawValue
      }
    }
    Interrupts.exit(status)
  }
}
