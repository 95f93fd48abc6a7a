import Foundation
import Testing

@testable import Ferry

/// What a sender may offer, checked on real files before any peer is asked: the receiver's
/// path rules, names that clash, and what a folder holds besides files.
@Suite("Checking an offer before sending")
struct OfferCheckTests {
  @Test("a set of paths: names twice, and a file that is also a folder, are refused")
  func tree() throws {
    let paths = try ["a/b.txt", "a/c.txt", "d"].map { try RelativePath(validating: $0) }
    try RelativePath.checkTree(paths)
    #expect(throws: PathError.duplicate("a/b.txt")) {
      try RelativePath.checkTree(paths + [try RelativePath(validating: "a/b.txt")])
    }
    #expect(throws: PathError.fileAndFolder("d")) {
      try RelativePath.checkTree(paths + [try RelativePath(validating: "d/e")])
    }
    #expect(throws: PathError.reserved(".ferry-partial/x")) {
      try RelativePath(validating: ".ferry-partial/x")
    }
    #expect(throws: PathError.fileAndFolder("a/b.txt")) {
      try RelativePath.checkTree([try RelativePath(validating: "a/b.txt/c")] + paths)
    }
  }

  @Test("the same file named twice is kept once; two files under one name are refused")
  func duplicates() throws {
    let root = try scratchFolder("offer")
    try writeText("\(root)/one/x.txt", "one")
    try writeText("\(root)/two/x.txt", "two")
    let one = URL(fileURLWithPath: "\(root)/one/x.txt")
    let kept = try ResourceItem.checked([
      ResourceItem(url: one, path: "x.txt"),
      ResourceItem(url: URL(fileURLWithPath: "\(root)/one/../one/x.txt"), path: "x.txt"),
    ])
    #expect(kept == [ResourceItem(url: one, path: "x.txt")])
    #expect(throws: ResourceError.unsafePath(.duplicate("x.txt"))) {
      try ResourceItem.checked(
        try ResourceItem.expanding([one, URL(fileURLWithPath: "\(root)/two/x.txt")]))
    }
  }

  @Test("a name the receiver would refuse is refused here, naming it")
  func unsafeName() throws {
    let root = try scratchFolder("offer")
    try writeText("\(root)/tree/new\nline.txt")
    let items = try ResourceItem.expanding([URL(fileURLWithPath: "\(root)/tree")])
    #expect(throws: ResourceError.unsafePath(.controlCharacter("tree/new\\u{A}line.txt"))) {
      try ResourceItem.checked(items)
    }
  }

  @Test("links, pipes and sockets in a folder are left out and reported; named, they are refused")
  func specialFiles() throws {
    let root = try scratchFolder("offer")
    try writeText("\(root)/tree/kept.txt")
    try FileManager.default.createSymbolicLink(
      atPath: "\(root)/tree/link", withDestinationPath: "/etc/passwd")
    #expect(mkfifo("\(root)/tree/pipe", 0o600) == 0)
    var skipped: [ResourceItem.Skipped] = []
    let items = try ResourceItem.expanding([URL(fileURLWithPath: "\(root)/tree")]) {
      skipped.append($0)
    }
    #expect(items.map(\.path) == ["tree/kept.txt"])
    #expect(
      Set(skipped) == [
        ResourceItem.Skipped(path: "\(root)/tree/link", reason: "a symbolic link (not followed)"),
        ResourceItem.Skipped(path: "\(root)/tree/pipe", reason: "a named pipe"),
      ])
    #expect(
      throws: ResourceError.cannotRead(
        "\(root)/tree/pipe: a named pipe, not a regular file or folder")
    ) {
      try ResourceItem.expanding([URL(fileURLWithPath: "\(root)/tree/pipe")])
    }
    // A link named directly is read through (as cp does).
    #expect(
      try ResourceItem.expanding([URL(fileURLWithPath: "\(root)/tree/link")]).map(\.path) == [
        "link"
      ])
  }

  @Test("a name in a folder that is not UTF-8 is refused before sending, naming the folder")
  func notUTF8() throws {
    let root = try scratchFolder("offer")
    try writeText("\(root)/tree/fine.txt")
    let bad = "\(root)/tree/caf".utf8CString.dropLast() + [CChar(bitPattern: 0xE9), 0]
    let fd = bad.withUnsafeBufferPointer { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o600) }
    #expect(fd >= 0)
    close(fd)
    do {
      _ = try ResourceItem.expanding([URL(fileURLWithPath: "\(root)/tree")])
      Issue.record("a non-UTF-8 name was accepted")
    } catch {
      guard case .cannotRead(let reason) = error else {
        Issue.record("expected cannotRead, got \(error)")
        return
      }
      #expect(reason.contains("\(root)/tree/caf"))
      #expect(reason.contains("not valid UTF-8"))
    }
  }
}
