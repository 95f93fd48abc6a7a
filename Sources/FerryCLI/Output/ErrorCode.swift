/// The stable `code` of `error` and `refused` events, declared once here (docs/CLI.md lists
/// exactly these; `EventCatalogTests` checks it).
enum ErrorCode: String, CaseIterable, Sendable {
  // Usage and input (exit 2).
  /// The command line itself: an unknown option, a missing value, a value of the wrong kind.
  case usage
  case invalidServiceType = "invalid-service-type"
  case invalidName = "invalid-name"
  case invalidAddress = "invalid-address"
  case invalidDir = "invalid-dir"
  /// The config file cannot be read, or says something this version does not take.
  case invalidConfig = "invalid-config"
  case invalidDiscoveryInfo = "invalid-discovery-info"
  case cannotRead = "cannot-read"
  case invalidPath = "invalid-path"
  case noPaths = "no-paths"
  case empty
  case ambiguousPeer = "ambiguous-peer"
  case shortFingerprint = "short-fingerprint"
  case invalidFingerprint = "invalid-fingerprint"
  case invalidChoice = "invalid-choice"
  case unknownPeer = "unknown-peer"
  case cannotListen = "cannot-listen"
  case identity
  case peersFile = "peers-file"
  /// No `ferry daemon` answers on its socket (exit 2).
  case noDaemon = "no-daemon"
  /// The daemon refused what was asked, or did not answer (its words in the message).
  case daemon
  // Finding and inviting peers.
  case noPeer = "no-peer"
  case severalPeers = "several-peers"
  case declined
  case authentication
  case keyChanged = "key-changed"
  case discoveryUnavailable = "discovery-unavailable"
  case discoveryFailed = "discovery-failed"
  case invitationFailed = "invitation-failed"
  case acceptFailed = "accept-failed"
  /// A LocalSend device is busy with another session (its 409).
  case busy
  /// A LocalSend device wants a PIN, refused the one given, or refuses this address after
  /// wrong ones (its 401 and 429).
  case pin
  // Transfers.
  case transferFailed = "transfer-failed"
  case refused
  case cancelled
  case interrupted
  case partial
  /// Files or folders inside the folders sent could not be read and were left out (exit 7).
  case unreadable
  case peerDisconnected = "peer-disconnected"
  case stalled
  case integrity
  case noSpace = "no-space"
  case unsafeDestination = "unsafe-destination"
}
