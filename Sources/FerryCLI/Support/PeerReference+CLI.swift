import Ferry
import FerryAgent

extension PeerReference {
  /// Classifies `text` (``PeerReference/init(_:knownPeers:)``), as the command's usage error
  /// (exit 2) when it names no key it could stand for.
  static func parse(_ text: String, knownPeers: KnownPeers) throws(CLIFailure) -> PeerReference {
    do {
      return try PeerReference(text, knownPeers: knownPeers)
    } catch {
      throw CLIFailure(error)
    }
  }

  /// This reference, or a trusted peer's nickname with its keys
  /// (``PeerReference/nickname(in:)``), as the command's usage error for an unreadable peers
  /// file.
  func resolvingNickname(in knownPeers: KnownPeers) throws(CLIFailure) -> PeerReference {
    do {
      return try nickname(in: knownPeers)
    } catch {
      throw CLIFailure(error)
    }
  }
}

extension CLIFailure {
  /// A peer reference's error as a usage error (exit 2) with its stable code.
  init(_ error: PeerReferenceError) {
    let code: ErrorCode
    switch error.kind {
    case .peersFile: code = .peersFile
    case .ambiguous: code = .ambiguousPeer
    case .tooShort: code = .shortFingerprint
    }
    self.init(status: .usage, message: error.message, code: code)
  }
}
