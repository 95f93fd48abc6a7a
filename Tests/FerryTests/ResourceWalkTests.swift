import Foundation
import Testing

@testable import Ferry

/// Walking a tree one file at a time, on real folders: the order, what is left out, and what
/// the receiver would refuse, found before anyone is asked.
@Suite("Walking files to offer")
struct ResourceWalkTests {
  func walkAll(_ entries: [ResourceItem], skipped: inout [String]) throws -> [(String, UInt64)] {
    var walk = ResourceWalk(entries)
    var found: [(String, UInt64)] = []
    var left: [String] = []
    while let next = try walk.next(skipped: { left.append($0.reason) }) {
      found.append((next.item.path, next.size))
    }
    skipped = left
    return found
  }

  @Test("files, folders depth first in byte order, sizes; empty folders found, links left out")
  func order() throws {
    let root = try scratchFolder("walk")
    try writeText("\(root)/top/b/2.txt", "22")
    try writeText("\(root)/top/b/1.txt", "1")
    try writeText("\(root)/top/a.txt", "aaa")
    try writeText("\(root)/top/B.txt", "")
    try FileManager.default.createDirectory(
      atPath: "\(root)/top/empty", withIntermediateDirectories: true)
    symlink("/etc/passwd", "\(root)/top/link")
    try writeText("\(root)/single.bin", "12345")
    var skipped: [String] = []
    let found = try walkAll(
      [
        ResourceItem(url: URL(fileURLWithPath: "\(root)/top"), path: "top"),
        ResourceItem(url: URL(fileURLWithPath: "\(root)/single.bin"), path: "named.bin"),
      ], skipped: &skipped)
    #expect(
      found.map(\.0) == [
        "top/B.txt", "top/a.txt", "top/b/1.txt", "top/b/2.txt", "top/empty", "named.bin",
      ])
    #expect(found.map(\.1) == [0, 3, 1, 2, 0, 5])
    #expect(skipped == ["a symbolic link (not followed)"])
  }

  @Test(
    "a folder with nothing to send below it is found as an empty folder: nested, only a link, named itself"
  )
  func emptyFolders() throws {
    let root = try scratchFolder("walk")
    let manager = FileManager.default
    try manager.createDirectory(atPath: "\(root)/t/a/b/c", withIntermediateDirectories: true)
    try manager.createDirectory(atPath: "\(root)/t/links", withIntermediateDirectories: true)
    symlink("/etc", "\(root)/t/links/etc")
    try writeText("\(root)/t/full/f.txt", "f")
    try manager.createDirectory(atPath: "\(root)/alone", withIntermediateDirectories: true)
    var walk = ResourceWalk([
      ResourceItem(url: URL(fileURLWithPath: "\(root)/t"), path: "t"),
      ResourceItem(url: URL(fileURLWithPath: "\(root)/alone"), path: "alone"),
    ])
    var found: [(String, Bool)] = []
    while let next = try walk.next() { found.append((next.item.path, next.item.isFolder)) }
    // Only the deepest empty folder: creating it creates the ones above it.
    #expect(found.map(\.0) == ["t/a/b/c", "t/full/f.txt", "t/links", "alone"])
    #expect(found.map(\.1) == [true, false, true, true])
    let expanded = try ResourceItem.expanding([
      URL(fileURLWithPath: "\(root)/t"), URL(fileURLWithPath: "\(root)/alone"),
    ])
    #expect(expanded.map(\.path) == ["t/a/b/c", "t/full/f.txt", "t/links", "alone"])
    #expect(expanded.map(\.isFolder) == [true, false, true, true])
    // A folder item checks as a folder, and a folder is no file item.
    #expect(try ResourceItem.checked(expanded).count == 4)
    #expect(throws: ResourceError.self) {
      _ = try ResourceItem.checked([
        ResourceItem(url: URL(fileURLWithPath: "\(root)/alone"), path: "alone")
      ])
    }
    #expect(throws: ResourceError.self) {
      _ = try ResourceItem.checked([
        ResourceItem(folderAt: URL(fileURLWithPath: "\(root)/t/full/f.txt"), path: "f")
      ])
    }
  }

  @Test("two spellings of one name in a folder are refused, as the receiver would refuse them")
  func canonicalTwins() throws {
    let root = try scratchFolder("walk")
    try writeText("\(root)/t/caf\u{E9}")
    try writeText("\(root)/t/cafe\u{301}")
    var skipped: [String] = []
    #expect(throws: ResourceError.self) {
      _ = try walkAll(
        [ResourceItem(url: URL(fileURLWithPath: "\(root)/t"), path: "t")], skipped: &skipped)
    }
  }

  @Test("a name that is not UTF-8, or a control character in a name, stops the walk")
  func badNames() throws {
    let root = try scratchFolder("walk")
    try FileManager.default.createDirectory(atPath: "\(root)/n", withIntermediateDirectories: true)
    let bad = "\(root)/n/".utf8CString.dropLast() + [CChar(bitPattern: 0xFF), 0]
    let fd = bad.withUnsafeBufferPointer { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) }
    #expect(fd >= 0)
    close(fd)
    var skipped: [String] = []
    #expect(throws: ResourceError.self) {
      _ = try walkAll(
        [ResourceItem(url: URL(fileURLWithPath: "\(root)/n"), path: "n")], skipped: &skipped)
    }
    let other = try scratchFolder("walk")
    try writeText("\(other)/c/line\u{1B}[2Jclear")
    #expect(throws: ResourceError.self) {
      _ = try walkAll(
        [ResourceItem(url: URL(fileURLWithPath: "\(other)/c"), path: "c")], skipped: &skipped)
    }
  }

  @Test("a tree deeper than the receiver takes is refused before it is offered")
  func tooDeep() throws {
    let root = try scratchFolder("walk")
    var path = "\(root)/deep"
    for _ in 0..<70 { path += "/d" }
    try writeText("\(path)/leaf")
    var skipped: [String] = []
    #expect(throws: ResourceError.self) {
      _ = try walkAll(
        [ResourceItem(url: URL(fileURLWithPath: "\(root)/deep"), path: "deep")],
        skipped: &skipped)
    }
  }

  @Test("20 000 files in 40 folders: every one found once, in the same order twice")
  func many() throws {
    let root = try scratchFolder("walk")
    for folder in 0..<40 {
      let directory = "\(root)/m/d\(folder)"
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      for file in 0..<500 {
        let fd = open("\(directory)/f\(file)", O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        close(fd)
      }
    }
    var skipped: [String] = []
    let entry = [ResourceItem(url: URL(fileURLWithPath: "\(root)/m"), path: "m")]
    let first = try walkAll(entry, skipped: &skipped).map(\.0)
    #expect(first.count == 20_000)
    #expect(Set(first).count == 20_000)
    #expect(try walkAll(entry, skipped: &skipped).map(\.0) == first)
  }
}
