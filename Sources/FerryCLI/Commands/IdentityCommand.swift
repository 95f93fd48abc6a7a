import ArgumentParser
import Ferry
import Foundation

/// `ferry identity`: shows this installation's fingerprint, creating the identity on first use.
struct IdentityCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "identity",
    abstract: "Show this machine's Ferry identity (its certificate fingerprint).",
    discussion: """
      The identity is a self-signed P-256 certificate and key in $FERRY_HOME (default \
      $XDG_CONFIG_HOME/ferry, else ~/.config/ferry), created on first use. Peers know this \
      machine by the fingerprint: tell it to senders who want to check it (ferry trust FPR).

      Examples:
        ferry identity
        ferry identity --json | jq -r .fingerprint
      """)

  @OptionGroup var logging: LogOptions

  @Flag(name: [.short, .long], help: "Write one JSON object to stdout.")
  var json = false

  func run() async throws {
    let output = EventWriter(json: json)
    let identity = try loadIdentity()
    let directory = FerryHome.defaultDirectory
    let certificate = directory.appendingPathComponent(Identity.certificateFileName).path
    output.emit(
      IdentityShown(
        fingerprint: identity.fingerprint.hexString,
        fingerprintGrouped: identity.fingerprint.description,
        short: identity.fingerprint.shortDescription, certificate: certificate,
        directory: directory.path))
    if !json {
      output.say("Fingerprint: \(identity.fingerprint)")
      output.say("Short:       \(identity.fingerprint.shortDescription)")
      output.say("Certificate: \(certificate)")
    }
  }
}

/// Loads (or creates) the identity, mapping its errors to exit status 5.
func loadIdentity() throws(CLIFailure) -> Identity {
  do {
    return try Identity.loadOrCreate()
  } catch {
    throw CLIFailure(status: .authentication, message: error.description, code: .identity)
  }
}
