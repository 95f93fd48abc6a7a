/// The receiver's verdict on one sent file.
public enum FileStatus: Hashable, Sendable, CustomStringConvertible {
  /// Stored and verified.
  case stored
  /// The SHA-256 did not match; nothing was kept.
  case corrupt
  /// It could not be written (the reason says why); nothing was kept.
  case failed
  /// Left out: the receiver's policy is skip, and the name holds a file this sender placed
  /// there before. (A name taken by anything else is not reported: such a file is `stored`, as
  /// far as the sender can tell.)
  case skipped
  /// The receiver already had it, with the same content: nothing was sent or written.
  case identical

  /// The sender's side of the receiver's verdict; nil for `differs`, which asks for a held
  /// file whole rather than ending it.
  init?(_ verdict: FileVerdict) {
    switch verdict {
    case .stored: self = .stored
    case .corrupt: self = .corrupt
    case .failed: self = .failed
    case .skipped: self = .skipped
    case .identical: self = .identical
    case .differs: return nil
    }
  }

  /// `stored`, `corrupt`, `failed`, `skipped` or `identical`.
  public var description: String {
    switch self {
    case .stored: "stored"
    case .corrupt: "corrupt"
    case .failed: "failed"
    case .skipped: "skipped"
    case .identical: "identical"
    }
  }
}
