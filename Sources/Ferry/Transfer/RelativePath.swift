/// A path inside a transfer, relative to the receiver's destination, checked so that it can
/// only ever name something *under* that destination.
///
/// Rules (each broken rule has its own ``PathError``): not empty; at most 4096 bytes; `/`
/// separates components; no leading `/`; every component non-empty, not `.` or `..`, at most
/// 255 bytes, without NUL or other control characters; at most 64 components.
public struct RelativePath: Hashable, Sendable, CustomStringConvertible {
  /// The components, e.g. `["photos", "2026", "a.jpg"]`.
  public let components: [String]

  /// The longest path in bytes.
  public static let maximumBytes = 4096
  /// The longest component in bytes (the Linux NAME_MAX).
  public static let maximumComponentBytes = 255
  /// The deepest path.
  public static let maximumDepth = 64

  /// Validates a path received from a peer (or given by the application).
  ///
  /// - Throws: ``PathError`` for the first rule broken.
  public init(validating text: String) throws(PathError) {
    if text.isEmpty { throw .empty }
    if text.utf8.count > Self.maximumBytes { throw .tooLong(escaped(text, keepingUnicode: true)) }
    if text.hasPrefix("/") { throw .absolute(escaped(text, keepingUnicode: true)) }
    let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    if parts.count > Self.maximumDepth { throw .tooDeep(escaped(text, keepingUnicode: true)) }
    for part in parts {
      let shown = escaped(text, keepingUnicode: true)
      if part.isEmpty { throw .emptyComponent(shown) }
      if part == "." || part == ".." { throw .dotComponent(shown) }
      if part.utf8.count > Self.maximumComponentBytes { throw .componentTooLong(shown) }
      if part.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
        throw .controlCharacter(shown)
      }
    }
    components = parts
  }

  /// The components joined with `/`.
  public var description: String { components.joined(separator: "/") }

  /// The last component.
  public var fileName: String { components[components.count - 1] }

  /// Checks that `paths` can all exist together under one destination: none is named twice,
  /// none is both a file and a folder (`a` and `a/b`), and none lies in the receiver's staging
  /// folder (`.ferry-partial`).
  ///
  /// - Throws: ``PathError/duplicate(_:)``, ``PathError/fileAndFolder(_:)`` or
  ///   ``PathError/reserved(_:)``.
  public static func checkTree(_ paths: [RelativePath]) throws(PathError) {
    for path in paths where path.components[0] == StagingArea.directoryName {
      throw .reserved(escaped(path.description, keepingUnicode: true))
    }
    var files = Set<[String]>()
    for path in paths {
      guard files.insert(path.components).inserted else {
        throw .duplicate(escaped(path.description, keepingUnicode: true))
      }
    }
    for path in paths {
      for depth in 1..<path.components.count where files.contains(Array(path.components[..<depth]))
      {
        throw .fileAndFolder(
          escaped(path.components[..<depth].joined(separator: "/"), keepingUnicode: true))
      }
    }
  }
}

/// Why a path cannot be used inside a destination.
public enum PathError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The path is empty.
  case empty
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
  /// Named twice in one offer.
  case duplicate(String)
  /// Named as a file and as a folder holding other files in one offer.
  case fileAndFolder(String)
  /// In (or named as) the receiver's staging folder, `.ferry-partial`.
  case reserved(String)

  /// A message naming the rule and the (escaped) path.
  public var description: String {
    switch self {
    case .empty: return "unsafe path: it is empty"
    case .tooLong(let path): return "unsafe path \"\(path)\": longer than 4096 bytes"
    case .absolute(let path): return "unsafe path \"\(path)\": absolute paths are not allowed"
    case .tooDeep(let path): return "unsafe path \"\(path)\": more than 64 levels"
    case .emptyComponent(let path): return "unsafe path \"\(path)\": empty component"
    case .dotComponent(let path): return "unsafe path \"\(path)\": '.' and '..' are not allowed"
    case .componentTooLong(let path):
      return "unsafe path \"\(path)\": a name is longer than 255 bytes"
    case .controlCharacter(let path):
      return "unsafe path \"\(path)\": control characters are not allowed"
    case .duplicate(let path):
      return "unsafe path \"\(path)\": two different files would arrive under this name"
    case .fileAndFolder(let path):
      return "unsafe path \"\(path)\": it would be both a file and a folder"
    case .reserved(let path):
      return
        "unsafe path \"\(path)\": \(StagingArea.directoryName) is where the receiver stages "
        + "incoming files"
    }
  }
}
