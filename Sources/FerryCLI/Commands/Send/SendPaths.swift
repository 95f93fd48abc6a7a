import Ferry
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

  /// The files to offer: each file as its name, each folder as its tree, checked as the
  /// receiver will check them (``ResourceItem/checked(_:)``) before anyone is asked. What a
  /// folder holds besides files and folders (links, pipes, sockets) is left out and reported
  /// to `skipped`.
  ///
  /// - Throws: ``CLIFailure`` (usage) when a path cannot be read or cannot be offered (unsafe
  ///   or clashing names), or there is nothing to send.
  func items(skipped: (ResourceItem.Skipped) -> Void) throws(CLIFailure) -> [ResourceItem] {
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
    var items: [ResourceItem] = []
    do {
      for (index, path) in paths.enumerated() {
        let found = try ResourceItem.expanding([URL(fileURLWithPath: path)], skipped: skipped)
        guard index >= argumentCount, let kept = Self.keptFolders(path) else {
          items += found
          continue
        }
        // `expanding` named everything after the last component; put the folders back.
        items += found.map { ResourceItem(url: $0.url, path: kept + $0.path) }
      }
    } catch {
      throw Self.failure(error)
    }
    items = try Self.checked(items)
    guard !items.isEmpty else {
      throw CLIFailure(
        status: .usage, message: "nothing to send: the folders are empty", code: .empty)
    }
    return items
  }

  /// `items` checked as the receiver will check them (``ResourceItem/checked(_:)``).
  ///
  /// - Throws: ``CLIFailure`` (usage) for an unsafe or clashing name, an unreadable file.
  static func checked(_ items: [ResourceItem]) throws(CLIFailure) -> [ResourceItem] {
    do {
      return try ResourceItem.checked(items)
    } catch {
      throw failure(error)
    }
  }

  private static func failure(_ error: ResourceError) -> CLIFailure {
    if case .unsafePath(let error) = error {
      return CLIFailure(
        status: .usage, message: "cannot send this: \(error.description)", code: .invalidPath)
    }
    return CLIFailure(status: .usage, message: error.description, code: .cannotRead)
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
