import ArgumentParser
import Ferry
import Foundation

/// `ferry trust FPR`: marks a peer trusted.
struct TrustCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "trust",
    abstract: "Mark a peer trusted by its fingerprint.",
    discussion: """
      FPR is the peer's full fingerprint (as 'ferry identity' prints it on that machine, spaces \
      and colons allowed), or a prefix of a known peer's fingerprint that matches only one.

      Examples:
        ferry trust "9F2C 41AB 0C3D 7E11 …" --name "Kitchen laptop"
        ferry trust 9F2C41AB
      """)

  @OptionGroup var logging: LogOptions

  @Argument(
    help: "The fingerprint, or a unique prefix of a known peer's.",
    completion: PeerCompletion.fingerprints)
  var fingerprint: String

  @Option(help: "The name to remember the peer by.")
  var name: String?

  func run() async throws {
    let store = KnownPeers()
    let resolved = try resolveFingerprint(fingerprint, in: store, allowUnknown: true)
    do {
      try store.trust(resolved, name: name)
    } catch {
      throw CLIFailure(status: .transferFailed, message: error.description, code: .peersFile)
    }
    EventWriter(json: false).note(
      "Trusted \(resolved.shortDescription)\(name.map { " (\($0))" } ?? "").")
  }
}
