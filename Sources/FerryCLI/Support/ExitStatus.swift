/// The exit codes of the `ferry` CLI, as the product brief specifies them.
enum ExitStatus: Int32, Sendable {
  /// Everything asked for was done.
  case success = 0
  /// Some transfer failed.
  case transferFailed = 1
  /// Usage error or invalid input.
  case usage = 2
  /// No peer found, peer unreachable, or timed out.
  case noPeer = 3
  /// The receiver declined.
  case declined = 4
  /// Authentication or verification failure.
  case authentication = 5
  /// Discovery unavailable (no avahi-daemon).
  case discoveryUnavailable = 6
  /// Sent, but files or folders inside the folders sent could not be read and were left out
  /// (rsync's 23).
  case partial = 7
  /// Interrupted (SIGINT).
  case interrupted = 130
}
