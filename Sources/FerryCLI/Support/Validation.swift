import Ferry

/// Parses `--service`, turning the RFC 6335 error into a usage failure (exit 2).
func parseServiceType(_ text: String) throws(CLIFailure) -> ServiceType {
  do {
    return try ServiceType(text)
  } catch {
    throw CLIFailure(status: .usage, message: error.description, code: "invalid-service-type")
  }
}

/// Maps a discovery error to the CLI's exit statuses.
func cliFailure(_ error: DiscoveryError) -> CLIFailure {
  switch error {
  case .discoveryUnavailable:
    return CLIFailure(
      status: .discoveryUnavailable, message: error.description, code: "discovery-unavailable")
  case .invalidDiscoveryInfo:
    return CLIFailure(status: .usage, message: error.description, code: "invalid-discovery-info")
  case .invalidDisplayName:
    return CLIFailure(status: .usage, message: error.description, code: "invalid-name")
  case .cannotListen:
    return CLIFailure(status: .usage, message: error.description, code: "cannot-listen")
  case .registrationFailed, .browsingFailed, .stopped:
    return CLIFailure(
      status: .discoveryUnavailable, message: error.description, code: "discovery-failed")
  }
}
