import Ferry

/// Why a send to one receiver ended without every file delivered: what kind of failure (which
/// an application maps to its own exit status or error code) and the words for people.
public struct SendFailure: Error, Sendable, CustomStringConvertible {
  /// What kind of failure it is.
  public enum Kind: Sendable, Equatable {
    /// The receiver was not found, or does not answer.
    case noPeer
    /// What was asked cannot be done (standard input to an older Ferry, too many files for
    /// LocalSend, a stream to LocalSend).
    case usage
    /// A file or folder to send cannot be read.
    case cannotRead
    /// A path to send is one a receiver would refuse (unsafe, or clashing with another).
    case invalidPath
    /// Nothing is left to send.
    case nothingToSend
    /// The folders being sent changed (more files than announced): sent again, they are
    /// announced again.
    case batchChanged
    /// The receiver declined.
    case declined
    /// The receiver is not who it must be (a key check inside the TLS handshake failed).
    case authentication
    /// The receiver's name is trusted with another key, and nobody confirmed sending to it.
    case keyChanged
    /// The invitation failed otherwise (a protocol mismatch, say).
    case invitationFailed
    /// The transfer failed.
    case transferFailed
    /// The receiver stopped the transfer, or it was cancelled there.
    case cancelled
    /// This side stopped it (Ctrl-C, the application's cancel).
    case interrupted
    /// Everything else was sent, but these paths could not be read (left out).
    case unreadable(Int)
    /// A LocalSend device is busy with another session.
    case busy
    /// A LocalSend device wants a PIN, refused the one given, or refuses this address after
    /// wrong ones.
    case pin
    /// A file arrived corrupted (its digest did not match at the receiver).
    case integrity
  }

  /// What kind of failure it is.
  public let kind: Kind
  /// What happened, in words for people (text from the peer escaped).
  public let message: String

  /// A failure of `kind`, said as `message`.
  public init(_ kind: Kind, _ message: String) {
    (self.kind, self.message) = (kind, message)
  }

  /// The message.
  public var description: String { message }

  /// The failure for a path that cannot be sent (a walk's or a check's error).
  public init(_ error: ResourceError) {
    if case .unsafePath(let error) = error {
      self.init(.invalidPath, "cannot send this: \(error.description)")
    } else {
      self.init(.cannotRead, error.description)
    }
  }

  /// The failure for an invitation to `label` that failed with `error`.
  public init(_ error: InvitationError, label: String) {
    switch error {
    case .declined:
      self.init(.declined, "\(label): \(error.description)")
    case .authenticationFailed:
      self.init(.authentication, "\(label): \(error.description)")
    case .unreachable(let address, _) where address == label:
      // --address: the error already names the address; said once.
      self.init(.noPeer, error.description)
    case .timedOut, .unreachable, .busy, .expired:
      self.init(.noPeer, "\(label): \(error.description)")
    default:
      self.init(.invitationFailed, "\(label): \(error.description)")
    }
  }

  /// This side stopped the send.
  public static let interrupted = SendFailure(.interrupted, "interrupted")
}
