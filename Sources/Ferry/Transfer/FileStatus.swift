import FerryWire

/// The receiver's verdict on one sent file.
public enum FileStatus: Hashable, Sendable, CustomStringConvertible {
  /// Stored and verified.
  case stored
  /// The SHA-256 did not match; nothing was kept.
  case corrupt
  /// It could not be written (the reason says why); nothing was kept.
  case failed
  /// Left out (the name was taken and the policy is skip).
  case skipped

  /// The verdict a FILE_ACK carries.
  init(_ wire: ResourceMessage.FileStatus) {
    switch wire {
    case .stored: self = .stored
    case .corrupt: self = .corrupt
    case .failed: self = .failed
    case .skipped: self = .skipped
    }
  }

  /// `stored`, `corrupt`, `failed` or `skipped`.
  public var description: String {
    switch self {
    case .stored: "stored"
    case .corrupt: "corrupt"
    case .failed: "failed"
    case .skipped: "skipped"
    }
  }
}
