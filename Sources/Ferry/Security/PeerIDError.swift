/// Why a display name cannot name a peer.
public enum PeerIDError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The display name is empty.
  case emptyDisplayName
  /// The display name is longer than 63 UTF-8 bytes. The name is given escaped.
  case displayNameTooLong(String, byteCount: Int)
  /// The display name holds a control character (newline, tab, NUL, …). The name is given escaped.
  case controlCharacterInDisplayName(String)

  /// A one-line explanation naming the rule.
  public var description: String {
    switch self {
    case .emptyDisplayName:
      return "invalid display name: it is empty; it needs 1 to 63 bytes of UTF-8"
    case .displayNameTooLong(let name, let count):
      return
        "invalid display name \"\(name)\": it is \(count) bytes of UTF-8; the limit is "
        + "\(PeerID.maximumDisplayNameBytes) (one DNS label)"
    case .controlCharacterInDisplayName(let name):
      return "invalid display name \"\(name)\": control characters are not allowed"
    }
  }
}
