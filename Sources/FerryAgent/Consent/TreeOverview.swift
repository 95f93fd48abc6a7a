/// What a list of relative paths puts where, read as bytes (as the kernel will): its top-level
/// entries and how many of its files are hidden. Shown in prompts so that nothing is written
/// where the person could not see it. Built one path at a time (``add(_:)``), so that a tree of
/// any size is summed up without holding its paths.
public struct TreeOverview: Sendable {
  /// Every distinct first component, in order of appearance.
  public private(set) var roots: [String] = []
  /// Paths with a component that starts with `.` (hidden from `ls` and file managers).
  public private(set) var hidden = 0
  private var seen = Set<[UInt8]>()

  /// The overview of no paths.
  public init() {}

  /// The overview of `paths`.
  public init(_ paths: [String]) {
    for path in paths { add(path) }
  }

  /// Counts one more path.
  public mutating func add(_ path: String) {
    let bytes = Array(path.utf8)
    let root = Array(bytes.prefix { $0 != UInt8(ascii: "/") })
    if seen.insert(root).inserted { roots.append(String(decoding: root, as: UTF8.self)) }
    let components = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
    if components.contains(where: { $0.first == UInt8(ascii: ".") }) { hidden += 1 }
  }
}
