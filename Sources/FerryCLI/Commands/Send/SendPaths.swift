import Ferry
import FerryAgent
import Foundation

/// The paths `ferry send` was given: its arguments, then those read from `--files-from`.
///
/// A path given as an argument arrives under its last component (`~/Pictures/trip` →
/// `trip/…`), as with `cp`. A relative path read from `--files-from` keeps its folders
/// (`src/main.c` → `src/main.c`), as with `tar -T` and `rsync --files-from`, so that
/// `find . -type f -print0 | ferry send --files-from - -0` recreates the tree; an absolute one,
/// or one climbing out with `..`, arrives under its last component.
struct SendPaths {
  /// Paths as given (relative to the current directory or absolute).
  let paths: [String]
  /// How many of ``paths`` (from the start) came from the command line.
  private let argumentCount: Int

  /// Collects `arguments` and, with `filesFrom` (a file, or `-` for standard input), one path per
  /// line — or per NUL byte with `nullSeparated` (`find -print0`). Empty entries are ignored; a
  /// trailing carriage return is kept (it is a legal file name byte).
  ///
  /// - Throws: ``CLIFailure`` (usage) when the list cannot be read or is not UTF-8.
  init(arguments: [String], filesFrom: String?, nullSeparated: Bool) throws(CLIFailure) {
    var paths = arguments
    if let filesFrom {
      let data: Data
      if filesFrom == "-" {
        data = FileHandle.standardInput.readDataToEndOfFile()
      } else {
        // The system's words for why (as cp or cat give them), not Foundation's sentence.
        let descriptor = open(filesFrom, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
          throw CLIFailure(
            status: .usage,
            message: "cannot read --files-from \(DisplayText.escaping(filesFrom)): "
              + systemWords(errno),
            code: .cannotRead)
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
          data = try handle.readToEnd() ?? Data()
        } catch {
          throw CLIFailure(
            status: .usage,
            message: "cannot read --files-from \(DisplayText.escaping(filesFrom)): "
              + "it is not a readable file",
            code: .cannotRead)
        }
      }
      let separator = nullSeparated ? UInt8(0) : UInt8(ascii: "\n")
      for entry in data.split(separator: separator, omittingEmptySubsequences: true) {
        guard let path = String(validating: entry, as: UTF8.self) else {
          throw CLIFailure(
            status: .usage, message: "--files-from \(filesFrom) has a path that is not UTF-8",
            code: .invalidPath)
        }
        paths.append(path)
      }
    }
    self.paths = paths
    self.argumentCount = arguments.count
  }

  /// What to offer: each path as an entry, a file under its name and a folder as its tree
  /// (walked later, part by part: ``SendBatch``). The entries are checked against each other
  /// as the receiver will check their paths (no name twice, in any spelling; none inside
  /// another), so that what the walk finds under them cannot clash either; the same file
  /// named twice is kept once.
  ///
  /// - Throws: ``CLIFailure`` (usage) when a path cannot be read or cannot be offered (unsafe
  ///   or clashing names).
  func entries() throws(CLIFailure) -> [ResourceItem] {
    guard !paths.isEmpty else {
      throw CLIFailure(
        status: .usage, message: "give at least one file or folder to send (or --files-from)",
        code: .noPaths)
    }
    for path in paths.prefix(argumentCount) where Self.looksLikeDestination(path) {
      throw CLIFailure(
        status: .usage,
        message: "cannot read \(DisplayText.escaping(path)): no such file or folder. ferry takes "
          + "no destination among the files: run 'ferry receive' on that machine, then "
          + "'ferry send FILES --to NAME' (or --address HOST:PORT)",
        code: .cannotRead)
    }
    var entries: [ResourceItem] = []
    for (index, path) in paths.enumerated() {
      let url = URL(fileURLWithPath: path)
      let base = url.standardizedFileURL.lastPathComponent
      let kept = index >= argumentCount ? Self.keptFolders(path) ?? "" : ""
      entries.append(ResourceItem(url: url, path: kept + base))
    }
    return try Self.checked(entries)
  }

  /// `entries` (files and folders) checked against each other as the receiver will check their
  /// paths (``SendBatch/checked(_:)``).
  ///
  /// - Throws: ``CLIFailure`` (usage) for an unsafe or clashing name, an unreadable path.
  static func checked(_ entries: [ResourceItem]) throws(CLIFailure) -> [ResourceItem] {
    do {
      return try SendBatch.checked(entries)
    } catch {
      throw CLIFailure(error)
    }
  }

  /// Whether `path`, which does not exist, reads like where scp or rsync would send to:
  /// `user@host`, `user@host:dir` or `host:dir`.
  private static func looksLikeDestination(_ path: String) -> Bool {
    var status = stat()
    guard lstat(path, &status) != 0, errno == ENOENT else { return false }
    return path.wholeMatch(of: /[A-Za-z0-9._-]+@[A-Za-z0-9.:\[\]_-]+(:.*)?/) != nil
      || path.wholeMatch(of: /[A-Za-z0-9.-]+:[^\/].*|[A-Za-z0-9.-]+:\/.*/) != nil
  }

  /// The folders (with a trailing slash) a `--files-from` path keeps in front of its last
  /// component; nil when it keeps none (absolute, `..`, or a bare name).
  ///
  /// Split on the byte `/`, as the kernel splits: `Character`s would glue a `/` to a combining
  /// mark after it and hide both the separator and a `..`.
  private static func keptFolders(_ path: String) -> String? {
    let bytes = Array(path.utf8)
    guard bytes.first != UInt8(ascii: "/") else { return nil }
    let components = bytes.split(separator: UInt8(ascii: "/")).filter {
      !$0.elementsEqual(".".utf8)
    }
    guard components.count > 1, !components.contains(where: { $0.elementsEqual("..".utf8) })
    else { return nil }
    let folders = Array(components.dropLast().joined(separator: [UInt8(ascii: "/")]))
    return String(decoding: folders, as: UTF8.self) + "/"
  }
}
