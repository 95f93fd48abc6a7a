import ArgumentParser
import Foundation

/// The `ferry` command: send and receive files between nearby Linux machines.
struct FerryCommand: LoggingCommand, AsyncParsableCommand {
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

  @OptionGroup var logging: LogOptions
}
