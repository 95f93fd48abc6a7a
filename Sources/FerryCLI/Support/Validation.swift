import Ferry

/// Parses `--service`, turning the RFC 6335 error into a usage failure (exit 2).
func parseServiceType(_ text: String) throws(CLIFailure) -> ServiceType {
  do {
    return try ServiceType(text)
  } catch {
    throw CLIFailure(status: .usage, message: error.description, code: .invalidServiceType)
  }
}

/// Maps a discovery error to the CLI's exit statuses.
func cliFailure(_ error: DiscoveryError) -> CLIFailure {
  switch error {
  case .discoveryUnavailable:
    return CLIFailure(
      status: .discoveryUnavailable,
      message: error.description
        + "\nWithout discovery, connect directly: ferry send --address HOST:PORT, with the port "
        + "'ferry receive --port N' listens on.",
      code: .discoveryUnavailable)
  case .invalidDiscoveryInfo:
    return CLIFailure(status: .usage, message: error.description, code: .invalidDiscoveryInfo)
  case .invalidDisplayName:
    return CLIFailure(status: .usage, message: error.description, code: .invalidName)
  case .portInUse:
    return CLIFailure(
      status: .usage,
      message: error.description
        + " (another 'ferry receive'?); choose another --port, or leave it out to let the "
        + "system pick one",
      code: .cannotListen)
  case .cannotListen:
    return CLIFailure(status: .usage, message: error.description, code: .cannotListen)
  case .registrationFailed, .browsingFailed, .stopped:
    return CLIFailure(
      status: .discoveryUnavailable, message: error.description, code: .discoveryFailed)
  }
}
