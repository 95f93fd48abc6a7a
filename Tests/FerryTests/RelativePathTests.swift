import Foundation
import Testing

@testable import Ferry

/// Paths from peers are checked as the kernel reads them: UTF-8 bytes split on 0x2F. A path the
/// validator accepts, placed by the real placing code, stays under its destination — for the
/// Unicode tricks that fooled a check on Swift `Character`s, and for random bytes.
@Suite("Relative paths, byte by byte")
struct RelativePathTests {
  @Test(
    "rules broken are named",
    arguments: [
      ("", PathError.empty),
      ("/etc/passwd", .absolute("/etc/passwd")),
      ("a//b", .emptyComponent("a//b")),
      ("a/", .emptyComponent("a/")),
      ("..", .dotComponent("..")),
      ("a/./b", .dotComponent("a/./b")),
      ("a/../../b", .dotComponent("a/../../b")),
      ("nul\u{0}", .controlCharacter("nul\\u{0}")),
      ("esc\u{1B}]0;x\u{7}", .controlCharacter("esc\\u{1B}]0;x\\u{7}")),
      ("bidi\u{202E}gpj.exe", .invisibleCharacter("bidi\\u{202E}gpj.exe", scalar: 0x202E)),
      ("zwj\u{200D}", .invisibleCharacter("zwj\\u{200D}", scalar: 0x200D)),
      ("line\u{2028}sep", .invisibleCharacter("line\\u{2028}sep", scalar: 0x2028)),
      ("para\u{2029}sep", .invisibleCharacter("para\\u{2029}sep", scalar: 0x2029)),
      ("tag\u{E0041}", .invisibleCharacter("tag\\u{E0041}", scalar: 0xE0041)),
      ("soft\u{AD}hyphen", .invisibleCharacter("soft\\u{AD}hyphen", scalar: 0xAD)),
      (".ferry-partial/x", .reserved(".ferry-partial/x")),
      (".FERRY-Partial", .reserved(".FERRY-Partial")),
    ])
  func refused(path: String, error: PathError) {
    #expect(throws: error) { try RelativePath(validating: path) }
  }

  @Test("lengths: 4096 bytes, 255 per name, 64 levels")
  func lengths() throws {
    _ = try RelativePath(validating: String(repeating: "a", count: 255))
    #expect(throws: PathError.self) {
      try RelativePath(validating: String(repeating: "a", count: 256))
    }
    let deep = Array(repeating: "d", count: 64).joined(separator: "/")
    _ = try RelativePath(validating: deep)
    #expect(throws: PathError.tooDeep(deep + "/d")) {
      try RelativePath(validating: deep + "/d")
    }
    // 255 bytes of a 2-byte character is not 255 characters: bytes count.
    #expect(throws: PathError.self) {
      try RelativePath(validating: String(repeating: "é", count: 128))
    }
    #expect(throws: PathError.self) {
      try RelativePath(validating: Array(repeating: "x", count: 2049).joined(separator: "/"))
    }
  }

  @Test("bytes that are not UTF-8 are refused")
  func notUTF8() {
    for bytes: [UInt8] in [
      [0xFF], [0x61, 0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x2E, 0x2E, 0xC0, 0xAF],
    ] {
      #expect(throws: PathError.self) { try RelativePath(validatingBytes: bytes) }
    }
  }

  /// `/` followed by something that joins it into one grapheme cluster: a check on Characters
  /// saw no separator (and no `..`), the kernel split on the byte.
  static let gluedAfterSlash: [String] = [
    "\u{301}",  // combining acute accent (Mn)
    "\u{300}\u{301}",  // two marks
    "\u{FE0F}",  // variation selector (Mn)
    "\u{903}",  // Devanagari visarga, a spacing mark (Mc)
    "\u{1F3FB}",  // emoji modifier (Sk, extends a cluster)
    "\u{20DD}",  // combining enclosing circle (Me)
    "\u{200D}",  // zero-width joiner (Cf)
    "\u{E0041}",  // tag letter A (Cf)
    "\u{600}",  // Arabic number sign, a prepend character (Cf)
    "\u{D4E}",  // Malayalam dot reph, a prepend character (Lo)
    "\u{1100}",  // Hangul choseong (L), joins the next jamo
  ]

  @Test("'../' + a character that joins the '/' is never a way out", arguments: gluedAfterSlash)
  func gluedToSlash(glue: String) throws {
    for path in ["../\(glue)pwned", "a/../\(glue)pwned", "..\(glue)/x", "a/\(glue)../../b"] {
      let scratch = try Scratch()
      if let accepted = try? RelativePath(validating: path) {
        #expect(!accepted.components.contains(".."))
        #expect(accepted.components.allSatisfy { !$0.utf8.contains(0x2F) })
        _ = try? scratch.place(accepted)
      }
      try scratch.expectConfined(path)
    }
  }

  @Test("look-alike slashes and dots are ordinary characters inside one name")
  func lookAlikes() throws {
    for path in [
      "..\u{FF0F}pwned",  // fullwidth solidus
      "..\u{2044}pwned",  // fraction slash
      "..\u{2215}pwned",  // division slash
      "\u{2024}\u{2024}/x",  // one-dot leaders
      "\u{FF0E}\u{FF0E}/x",  // fullwidth full stops
    ] {
      let scratch = try Scratch()
      let accepted = try RelativePath(validating: path)
      let placed = try #require(try scratch.place(accepted))
      #expect(scratch.isInside(placed))
      try scratch.expectConfined(path)
    }
  }

  @Test("NFC and NFD spellings of one name are one name in an offer (they look the same)")
  func canonicalTwins() throws {
    let composed = try RelativePath(validating: "caf\u{E9}.txt")
    let decomposed = try RelativePath(validating: "cafe\u{301}.txt")
    #expect(composed != decomposed, "different bytes, different files for the kernel")
    #expect(throws: PathError.duplicate("cafe\u{301}.txt")) {
      try RelativePath.checkTree([composed, decomposed])
    }
  }

  @Test("property: random bytes and random mixes of '/', '.' and marks never leave DEST")
  func randomPaths() throws {
    var random = SplitMix64(
      seed: UInt64(ProcessInfo.processInfo.environment["FERRY_SEED"] ?? "")
        ?? UInt64.random(in: 0...UInt64.max))
    print("random path property: seed \(random.seed) (FERRY_SEED=\(random.seed) repeats it)")
    let scratch = try Scratch()
    let pieces: [[UInt8]] = [
      [0x2F], [0x2E], [0x2E, 0x2E], [0x2E, 0x2E, 0x2F], [0xCC, 0x81], [0xEF, 0xB8, 0x8F],
      [0xE2, 0x80, 0x8D], [0xF0, 0x9F, 0x8F, 0xBB], [0x61], [0x00], [0x0A], [0xFF], [0xC0, 0xAF],
      Array(".ferry-partial".utf8), [0xEF, 0xBC, 0x8F], [0xE2, 0x81, 0x84],
    ]
    var accepted = 0
    for round in 0..<4000 {
      var bytes: [UInt8] = []
      let length = Int(random.next() % 12)
      for _ in 0..<length {
        if random.next() % 4 == 0 {
          bytes.append(UInt8(truncatingIfNeeded: random.next()))
        } else {
          bytes += pieces[Int(random.next() % UInt64(pieces.count))]
        }
      }
      guard let path = try? RelativePath(validatingBytes: bytes) else { continue }
      accepted += 1
      #expect(path.bytes == bytes)
      #expect(!path.components.contains("..") && !path.components.contains("."))
      do {
        if let placed = try scratch.place(path, tag: round) {
          // Compared as bytes: String.hasPrefix compares Characters, and "dest/" followed by a
          // mark is not a Character-prefix of itself.
          #expect(scratch.isInside(placed), "\(bytes)")
        }
      } catch {
        // A name already taken by a file where a folder is needed: refused, inside DEST.
        guard case .unsafeDestination = error else {
          Issue.record("placing \(bytes): \(error)")
          continue
        }
      }
    }
    print("random path property: \(accepted) of 4000 accepted and placed")
    #expect(accepted > 200)
    try scratch.expectConfined("random paths, seed \(random.seed)")
  }
}

/// A scratch folder holding `dest/` (the destination) and `staging/`; placing a path creates a
/// file in staging and moves it under dest with the real ``ConfinedDirectory`` code.
private struct Scratch {
  let root: URL
  var destination: URL { root.appendingPathComponent("dest") }

  init() throws {
    root = URL(fileURLWithPath: NSTemporaryDirectory() + "ferry-paths-\(UUID().uuidString)")
    try FileManager.default.createDirectory(
      at: root.appendingPathComponent("dest"), withIntermediateDirectories: true)
    try FileManager.default.createDirectory(
      at: root.appendingPathComponent("staging"), withIntermediateDirectories: true)
  }

  /// Places a new file at `path` under the destination; returns where it landed.
  func place(_ path: RelativePath, tag: Int = 0) throws(ResourceError) -> URL? {
    let staging = open(root.appendingPathComponent("staging").path, O_RDONLY | O_DIRECTORY)
    defer { close(staging) }
    let name = "part-\(tag)"
    let file = openat(staging, name, O_WRONLY | O_CREAT, 0o600)
    close(file)
    return try ConfinedDirectory(root: destination).place(
      name, from: staging, at: path, policy: .rename)
  }

  /// Whether `url` lies under the destination, compared byte by byte.
  func isInside(_ url: URL) -> Bool {
    let path = Array(url.standardizedFileURL.path.utf8)
    let prefix = Array((destination.path + "/").utf8)
    var status = stat()
    return path.starts(with: prefix) && !path[prefix.count...].isEmpty
      && lstat(url.path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
  }

  /// Nothing but `dest` and `staging` beside the destination, and no symbolic link anywhere
  /// below (so nothing was created outside, nor through a link). Walked with the system calls,
  /// name by name: Foundation's path handling splits on Characters too.
  func expectConfined(_ what: String) throws {
    let top = try FileManager.default.contentsOfDirectory(atPath: root.path).sorted()
    #expect(top == ["dest", "staging"], "\(what.debugDescription) wrote beside the destination")
    let fd = open(destination.path, O_RDONLY | O_DIRECTORY)
    #expect(!containsLink(fd), "\(what.debugDescription) left a symbolic link")
    try? FileManager.default.removeItem(at: root)
  }

  /// Whether the folder `fd` (closed here) holds a symbolic link at any depth.
  private func containsLink(_ fd: Int32) -> Bool {
    guard let directory = fdopendir(fd) else {
      close(fd)
      return false
    }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
      if name == [0x2E] || name == [0x2E, 0x2E] { continue }
      let cName = name.map { CChar(bitPattern: $0) } + [0]
      var status = stat()
      let found = fstatat(dirfd(directory), cName, &status, AT_SYMLINK_NOFOLLOW)
      guard found == 0 else { continue }
      switch status.st_mode & S_IFMT {
      case S_IFLNK: return true
      case S_IFDIR:
        let child = openat(dirfd(directory), cName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        if child >= 0 && containsLink(child) { return true }
      default: continue
      }
    }
    return false
  }
}

/// A small seeded generator, so a failing random case can be run again.
struct SplitMix64: RandomNumberGenerator {
  let seed: UInt64
  private var state: UInt64

  init(seed: UInt64) {
    self.seed = seed
    state = seed
  }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
