import ArgumentParser
import Ferry
import Foundation

/// `ferry forget FPR`: removes a peer.
struct ForgetCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "forget",
    abstract: "Forget a known peer.",
    discussion: """
      Examples:
        ferry forget 9F2C41AB
      """)

  @OptionGroup var logging: LogOptions

  @Argument(
    help: "The fingerprint, or a unique prefix of a known peer's.",
    completion: PeerCompletion.fingerprints)
  var fingerprint: String

  func run() async throws {
    let store = KnownPeers()
    let resolved = try resolveFingerprint(fingerprint, in: store, allowUnknown: false)
    do {
      try store.forget(resolved)
    } catch {
      throw CLIFailure(status: .transferFailed, message: error.description, code: .peersFile)
    }
    EventWriter(json: false).note("Forgot \(resolved.shortDescription).")
  }
}
