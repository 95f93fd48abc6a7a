/// What a list of relative paths puts where, read as bytes (as the kernel will): its top-level
/// entries and how many of its files are hidden. Shown in prompts so that nothing is written
/// where the person could not see it.
struct TreeOverview: Sendable {
  /// Every distinct first component, in order of appearance.
  let roots: [String]
  /// Paths with a component that starts with `.` (hidden from `ls` and file managers).
  let hidden: Int

  init(_ paths: [String]) {
    var seen = Set<[UInt8]>()
    var roots: [String] = []
    var hidden = 0
    for path in paths {
      let bytes = Array(path.utf8)
      let root = Array(bytes.prefix { $0 != UInt8(ascii: "/") })
      if seen.insert(root).inserted { roots.append(String(decoding: root, as: UTF8.self)) }
      let components = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
      if components.contains(where: { $0.first == UInt8(ascii: ".") }) { hidden += 1 }
    }
    self.roots = roots
    self.hidden = hidden
  }
}
