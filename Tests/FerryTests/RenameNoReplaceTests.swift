import Foundation
import Testing

@testable import Ferry

/// Placing a received file never replaces one that appeared meanwhile — also on filesystems
/// without renameat2(RENAME_NOREPLACE) (NFS), where the link(2) fallback takes over.
@Suite("Renaming without replacing")
struct RenameNoReplaceTests {
  @Test(
    "moves a file, and refuses with EEXIST to replace one, with and without renameat2",
    arguments: [true, false])
  func noReplace(tryRenameat2: Bool) throws {
    let root = NSTemporaryDirectory() + "ferry-rename-\(UUID().uuidString)"
    try FileManager.default.createDirectory(
      atPath: root + "/staging", withIntermediateDirectories: true)
    try Data("new".utf8).write(to: URL(fileURLWithPath: root + "/staging/part"))
    try Data("mine".utf8).write(to: URL(fileURLWithPath: root + "/taken.txt"))
    let staging = open(root + "/staging", O_RDONLY | O_DIRECTORY)
    let destination = open(root, O_RDONLY | O_DIRECTORY)
    defer {
      close(staging)
      close(destination)
    }

    let refused = renameNoReplace(
      staging, "part", destination, "taken.txt", tryRenameat2: tryRenameat2)
    let error = errno
    #expect(refused == -1 && error == EEXIST)
    #expect(try String(contentsOfFile: root + "/taken.txt", encoding: .utf8) == "mine")
    #expect(FileManager.default.fileExists(atPath: root + "/staging/part"))

    #expect(
      renameNoReplace(staging, "part", destination, "free.txt", tryRenameat2: tryRenameat2) == 0)
    #expect(try String(contentsOfFile: root + "/free.txt", encoding: .utf8) == "new")
    #expect(!FileManager.default.fileExists(atPath: root + "/staging/part"))
    var status = stat()
    #expect(stat(root + "/free.txt", &status) == 0 && status.st_nlink == 1)
  }
}
