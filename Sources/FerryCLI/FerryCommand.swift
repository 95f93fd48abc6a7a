import ArgumentParser
import Foundation

/// The `ferry` command: send and receive files between nearby Linux machines.
struct FerryCommand: AsyncParsableCommand {
  /// The version `ferry --version` prints.
  static let version = "0.1.0"

  static let configuration = CommandConfiguration(
    commandName: "ferry",
    abstract: "Find nearby machines and move files between them, encrypted end to end.",
    discussion: """
      Peers find each other through mDNS/DNS-SD (avahi-daemon).

      Exit codes: 0 success, 1 a transfer failed, 2 usage or invalid input, 3 no peer found or \
      timed out, 4 declined, 5 authentication failure, 6 discovery unavailable, 130 interrupted.
      """,
    version: version,
    subcommands: [
      SendCommand.self, ReceiveCommand.self, BrowseCommand.self, IdentityCommand.self,
      PeersCommand.self,
      TrustCommand.self, ForgetCommand.self,
    ])
}

/// Entry point: runs the command and maps every error to the brief's exit codes (argument
/// parsing errors exit 2, not ArgumentParser's default 64).
@main
enum FerryMain {
  static func main() async {
    let status: Int32
    do {
      var command = try FerryCommand.parseAsRoot()
      if var command = command as? any AsyncParsableCommand {
        try await command.run()
      } else {
        try command.run()
      }
      status = ExitStatus.success.rawValue
    } catch let failure as CLIFailure {
      // After Ctrl-C, what failed is the interruption's doing: the signal handler reports it.
      if !Interrupts.wasInterrupted {
        EventWriter(json: CommandLine.arguments.contains("--json")).failure(failure)
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
    Interrupts.exitIfInterrupted()
    exit(status)
  }
}
