/// A path inside a transfer, relative to the receiver's destination, checked so that it can
/// only ever name something *under* that destination.
///
/// The check works on the path's UTF-8 bytes, as the kernel will read them — never on Swift
/// `Character`s (grapheme clusters), which can glue a `/` to the combining mark after it and so
/// hide a separator. Rules (each broken rule has its own ``PathError``): valid UTF-8; not empty;
/// at most 4096 bytes; the byte `/` (0x2F) separates components; no leading `/`; every component
/// non-empty, not `.` or `..`, at most 255 bytes, with no control (Cc), format (Cf), line or
/// paragraph separator (Zl, Zp) character; at most 64 components; the first component is not the
/// receiver's staging folder (`.ferry-partial`, in any letter case).
///
/// Components are handed to the kernel one at a time (`openat` of a single name), so a path this
/// type accepts cannot climb out of the directory it is created under.
public struct RelativePath: Hashable, Sendable, CustomStringConvertible {
  /// The components, e.g. `["photos", "2026", "a.jpg"]`. None contains the byte `/`.
  public let components: [String]
  /// The path's bytes, exactly as received (components joined by `/`).
  public let bytes: [UInt8]

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
    try self.init(validatingBytes: Array(text.utf8))
  }

  /// Validates a path given as bytes (as it arrives on the wire).
  ///
  /// - Throws: ``PathError`` for the first rule broken, ``PathError/notUTF8(_:)`` first of all.
  public init(validatingBytes bytes: [UInt8]) throws(PathError) {
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw .notUTF8(escaped(String(decoding: bytes, as: UTF8.self), keepingUnicode: true))
    }
    let shown = { escaped(text, keepingUnicode: true) }
    if bytes.isEmpty { throw .empty }
    if bytes.count > Self.maximumBytes { throw .tooLong(shown()) }
    if bytes[0] == Self.separator { throw .absolute(shown()) }
    let parts = bytes.split(separator: Self.separator, omittingEmptySubsequences: false)
    if parts.count > Self.maximumDepth { throw .tooDeep(shown()) }
    var components: [String] = []
    components.reserveCapacity(parts.count)
    for part in parts {
      if part.isEmpty { throw .emptyComponent(shown()) }
      if part.elementsEqual([Self.dot]) || part.elementsEqual([Self.dot, Self.dot]) {
        throw .dotComponent(shown())
      }
      if part.count > Self.maximumComponentBytes { throw .componentTooLong(shown()) }
      // Whole UTF-8 sequences never contain 0x2F, so each part is valid UTF-8 on its own.
      let component = String(decoding: part, as: UTF8.self)
      // Printable ASCII (most names) has no control, format or separator character: only
      // other bytes need their scalar's category looked up.
      if part.allSatisfy({ (0x20...0x7E).contains($0) }) {
        components.append(component)
        continue
      }
      for scalar in component.unicodeScalars {
        switch scalar.properties.generalCategory {
        case .control: throw .controlCharacter(shown())
        case .format, .lineSeparator, .paragraphSeparator:
          throw .invisibleCharacter(shown(), scalar: scalar.value)
        default: continue
        }
      }
      components.append(component)
    }
    if Self.isStagingName(parts[0]) { throw .reserved(shown()) }
    self.components = components
    self.bytes = bytes
  }

  /// The components joined with `/`.
  public var description: String { String(decoding: bytes, as: UTF8.self) }

  /// The last component.
  public var fileName: String { components[components.count - 1] }

  /// Paths are equal when their bytes are: what the kernel sees. (``checkTree(_:)`` is stricter:
  /// it also counts canonically equivalent spellings as one name.)
  public static func == (lhs: RelativePath, rhs: RelativePath) -> Bool { lhs.bytes == rhs.bytes }

  /// Hashes the bytes.
  public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }

  /// Checks that `paths` can all exist together under one destination: none is named twice,
  /// none is both a file and a folder (`a` and `a/b`).
  ///
  /// Names are compared as people read them: two spellings that are canonically equivalent
  /// (`é` precomposed, and `e` + U+0301) are the same name here, although the kernel would store
  /// two files — they would look identical in every listing, and on normalizing filesystems
  /// they are one file.
  ///
  /// - Throws: ``PathError/duplicate(_:)`` or ``PathError/fileAndFolder(_:)``.
  public static func checkTree(_ paths: [RelativePath]) throws(PathError) {
    // Every folder and file is a node named by its parent's node and its own name, so each
    // path costs one step per component (a path of 2 000 one-letter components stays linear).
    // Swift's String equality and hashing are canonical equivalence: NFC/NFD twins collide.
    struct Node: Hashable {
      let parent: Int
      let name: String
    }
    var nodes: [Node: Int] = [:]
    var files = Set<Int>()
    var folders = Set<Int>()
    for path in paths {
      var parent = 0  // the destination itself
      for (depth, name) in path.components.enumerated() {
        let key = Node(parent: parent, name: name)
        let node = nodes[key] ?? (nodes.count + 1)
        nodes[key] = node
        let prefix = {
          escaped(path.components[...depth].joined(separator: "/"), keepingUnicode: true)
        }
        if depth < path.components.count - 1 {
          if files.contains(node) { throw .fileAndFolder(prefix()) }
          folders.insert(node)
        } else {
          guard files.insert(node).inserted else {
            throw .duplicate(escaped(path.description, keepingUnicode: true))
          }
          if folders.contains(node) { throw .fileAndFolder(prefix()) }
        }
        parent = node
      }
    }
  }

  /// Whether `name` is the staging folder's name in some letter case (a case-insensitive
  /// destination filesystem would open the staging folder for it).
  static func isStagingName<Bytes: Collection<UInt8>>(_ name: Bytes) -> Bool {
    let staging = StagingArea.directoryName.utf8
    guard name.count == staging.count else { return false }
    return zip(name, staging).allSatisfy { lowercasedASCII($0) == $1 }
  }

  static let separator = UInt8(ascii: "/")
  static let dot = UInt8(ascii: ".")
}

private func lowercasedASCII(_ byte: UInt8) -> UInt8 {
  (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
}
