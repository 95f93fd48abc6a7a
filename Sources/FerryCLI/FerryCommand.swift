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
      Peers find each other through mDNS/DNS-SD (avahi-daemon). Phones and other LocalSend \
      apps are reached with --localsend (send, receive, browse), and any browser with --web \
      (a page and a QR code: receive --web takes its files, send --web offers them).

      Exit codes: 0 success, 1 a transfer failed, 2 usage or invalid input, 3 no peer found or \
      timed out, 4 declined, 5 authentication failure, 6 discovery unavailable, 7 sent but for \
      unreadable files in folders, 130 interrupted.

      Examples:
        ferry receive                          # on the machine that gets the files
        ferry send photos/ notes.txt           # on the other: pick a receiver, send
        ferry send -t desk report.pdf          # to the receiver named 'desk'
        ferry send --address 10.0.0.5:52000 big.iso    # no avahi-daemon: by address
        ferry receive -y --once -j -d /srv/in  # scripted: accept, JSON, one offer
        ferry send --localsend -t "Ana's Pixel" a.jpg  # to a phone with LocalSend
        ferry receive --web                    # from a browser: scan the QR code
        ferry browse                           # who is around
        ferry doctor                           # what is wrong, and how to fix it
      """,
    version: version,
    subcommands: [
      SendCommand.self, ReceiveCommand.self, BrowseCommand.self, IdentityCommand.self,
      PeersCommand.self,
      TrustCommand.self, ForgetCommand.self, DoctorCommand.self, DaemonCommand.self,
      StatusCommand.self, OffersCommand.self, AcceptCommand.self, DeclineCommand.self,
      OutboxCommand.self, EventsCommand.self, UICommand.self,
    ])

  @OptionGroup var logging: LogOptions
}
