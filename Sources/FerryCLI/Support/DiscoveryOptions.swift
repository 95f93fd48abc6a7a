import ArgumentParser
import Ferry

/// `--domain`: the unicast DNS-SD domains browsed besides the local network, for commands that
/// look for Ferry peers; without it, the config's `[discovery] domains`.
struct DiscoveryOptions: ParsableArguments {
  @Option(
    name: .customLong("domain"),
    help: ArgumentHelp(
      "Also look for peers in this unicast DNS-SD domain (repeatable; default: the config's "
        + "[discovery] domains).",
      valueName: "domain"))
  var domains: [String] = []

  /// The domains to browse: `--domain`, else the config's.
  ///
  /// - Throws: ``CLIFailure`` (usage) for a text that is not a DNS domain.
  func resolved() throws(CLIFailure) -> [BrowseDomain] {
    guard !domains.isEmpty else { return SharedConfig.domains }
    var resolved: [BrowseDomain] = []
    for text in domains {
      do {
        resolved.append(try BrowseDomain(text))
      } catch {
        throw CLIFailure(status: .usage, message: error.description, code: .usage)
      }
    }
    return resolved
  }
}
