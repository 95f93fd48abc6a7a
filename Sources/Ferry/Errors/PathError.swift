/// Why a path cannot be used inside a destination.
public enum PathError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The path is empty.
  case empty
  /// The path's bytes are not valid UTF-8 (shown with the invalid bytes replaced).
  case notUTF8(String)
  /// Longer than 4096 bytes.
  case tooLong(String)
  /// Starts with `/`.
  case absolute(String)
  /// More than 64 components.
  case tooDeep(String)
  /// Has an empty component (`a//b`, a trailing `/`).
  case emptyComponent(String)
  /// Has a `.` or `..` component.
  case dotComponent(String)
  /// A component is longer than 255 bytes.
  case componentTooLong(String)
  /// Holds NUL, newline or another control character.
  case controlCharacter(String)
  /// Holds an invisible format character (zero-width joiner, bidirectional override, …) or a
  /// line or paragraph separator; `scalar` is the first one.
  case invisibleCharacter(String, scalar: UInt32)
  /// Named twice in one offer (or as two spellings that look the same).
  case duplicate(String)
  /// Named as a file and as a folder holding other files in one offer.
  case fileAndFolder(String)
  /// In (or named as) the receiver's staging folder, `.ferry-partial`.
  case reserved(String)

  /// The staging folder's name, which no offered path may use (``reserved(_:)``): defined here,
  /// below the transfer core, so that this error can name it; ``StagingArea/directoryName``
  /// reads it.
  static let reservedName = ".ferry-partial"

  /// A message naming the rule and the (escaped) path.
  public var description: String {
    switch self {
    case .empty: return "unsafe path: it is empty"
    case .notUTF8(let path): return "unsafe path \"\(path)\": it is not valid UTF-8"
    case .tooLong(let path): return "unsafe path \"\(path)\": longer than 4096 bytes"
    case .absolute(let path): return "unsafe path \"\(path)\": absolute paths are not allowed"
    case .tooDeep(let path): return "unsafe path \"\(path)\": more than 64 levels"
    case .emptyComponent(let path): return "unsafe path \"\(path)\": empty component"
    case .dotComponent(let path): return "unsafe path \"\(path)\": '.' and '..' are not allowed"
    case .componentTooLong(let path):
      return "unsafe path \"\(path)\": a name is longer than 255 bytes"
    case .controlCharacter(let path):
      return "unsafe path \"\(path)\": control characters are not allowed"
    case .invisibleCharacter(let path, let scalar):
      let code = String(scalar, radix: 16, uppercase: true)
      return "unsafe path \"\(path)\": invisible or separator characters such as "
        + "U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code) are not allowed"
    case .duplicate(let path):
      return "unsafe path \"\(path)\": two different files would arrive under this name"
    case .fileAndFolder(let path):
      return "unsafe path \"\(path)\": it would be both a file and a folder"
    case .reserved(let path):
      return
        "unsafe path \"\(path)\": \(Self.reservedName) is where the receiver stages "
        + "incoming files"
    }
  }
}
