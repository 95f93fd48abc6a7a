import ArgumentParser
import Foundation
import Testing

@testable import FerryCLI

/// What `--help` says against docs/CLI.md and the code: a default changed in one place and not
/// the others fails here.
@Suite("--help texts against docs/CLI.md")
struct HelpTextTests {
  /// docs/CLI.md, as the NDJSON catalogue's tests read it.
  static var document: String { EventCatalogTests.document }

  /// Every command's full help, as `ferry COMMAND --help` prints it.
  static var helpTexts: [String] {
    FerryCommand.configuration.subcommands.map { FerryCommand.helpMessage(for: $0) }
  }

  @Test("the default digest is the same in the code, in every --help and in docs/CLI.md")
  func defaultDigest() throws {
    let chosen = try SendCommand.parse(["--to", "0123456789ABCDEF", "file"]).checksum
    #expect(chosen == .xxh3)
    #expect(Self.document.contains("(default `\(chosen.rawValue)`)"))
    for help in Self.helpTexts {
      // A help text that names SHA-256 as what verifies files names the default too.
      let flat = help.replacingOccurrences(of: "\n", with: " ")
      if flat.contains("verified (SHA-256)") || flat.contains("verified with SHA-256") {
        Issue.record("a --help text says files are verified with SHA-256 alone: \(help)")
      }
    }
    let receive = FerryCommand.helpMessage(for: ReceiveCommand.self)
    #expect(receive.contains("XXH3-128"), "\(receive)")
  }
}
