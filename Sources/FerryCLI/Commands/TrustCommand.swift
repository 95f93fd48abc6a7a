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
      and colons allowed), or a prefix of at least 16 digits of a known peer's fingerprint that \
      matches only one: a shorter prefix can be matched on purpose by another key in hours, and \
      a trusted peer is accepted without asking (ferry receive --accept-trusted). Compare the \
      digits with 'ferry identity' on that machine. Trusting pins the name (--name, or the one \
      the peer is known by) to the key: another key that comes with it is KEY CHANGED.

      Examples:
        ferry trust "9F2C 41AB 0C3D 7E11 …" --name "Kitchen laptop"
        ferry trust 9F2C41AB0C3D7E11
      """)

  @OptionGroup var logging: LogOptions

  // Not completed from the known peers: trust is consent to a key the user compared.
  @Argument(help: "The fingerprint, or a unique prefix (16+ digits) of a known peer's.")
  var fingerprint: String

  @Option(
    help: ArgumentHelp(
      "The name to remember the peer by: 'ferry send' finds its key by that name, "
        + "whatever name it advertises."))
  var name: String?

  func run() async throws {
    let store = KnownPeers()
    if let digits = Fingerprint.prefixLength(of: fingerprint),
      digits < Fingerprint.minimumPrefixDigits
    {
      throw CLIFailure(
        status: .usage,
        message: "'\(DisplayText.escaping(fingerprint))' is \(digits) digits: trusting takes at "
          + "least \(Fingerprint.minimumPrefixDigits) (another key can be made to match fewer); "
          + "compare them with 'ferry identity' on that machine",
        code: .shortFingerprint)
    }
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
