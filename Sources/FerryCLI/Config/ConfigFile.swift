import FerryAgent
import Foundation

/// A parsed config file: the subset of TOML that Ferry's settings need — `[table]` headers,
/// `key = value` lines (the key may be dotted: `receive.dir = …`), `#` comments; values are basic (`"…"`, with `\"`, `\\`, `\n`, `\t`,
/// `\uXXXX` escapes) or literal (`'…'`) strings, integers, floats, booleans, and arrays of
/// these (which may span lines).
///
/// Parsed as bytes: the file must be UTF-8, at most ``maximumSize`` bytes, with no control
/// characters but tab and newline; a key given twice, a table given twice, or anything
/// else TOML would reject is an error naming the line.
struct ConfigFile: Sendable {
  /// Larger files are refused: a settings file is a few hundred bytes.
  static let maximumSize = 64 * 1024

  /// The tables by name; keys outside any table are in the table named "".
  private(set) var tables: [String: [String: ConfigValue]] = [:]
  /// The line each table header is on.
  private(set) var tableLines: [String: Int] = [:]

  /// Parses `text`.
  ///
  /// - Throws: ``ConfigError`` with the line of the first mistake.
  init(parsing bytes: [UInt8]) throws(ConfigError) {
    guard bytes.count <= Self.maximumSize else {
      throw ConfigError(line: 0, message: "larger than \(Self.maximumSize / 1024) KiB")
    }
    guard String(validating: bytes, as: UTF8.self) != nil else {
      throw ConfigError(line: 0, message: "not UTF-8 text")
    }
    var parser = ConfigParser(bytes: bytes)
    var table = ""
    tables[""] = [:]
    while let item = try parser.nextItem() {
      switch item {
      case .table(let name, let line):
        guard tables[name] == nil else {
          throw ConfigError(line: line, message: "table [\(name)] is given twice")
        }
        tables[name] = [:]
        tableLines[name] = line
        table = name
      case .pair(let parts, let value):
        // A dotted key names its table: `receive.dir = …` at the top is `dir` in [receive].
        // Ferry's tables hold no tables, so a key reaches at most one table deep.
        let path = (table.isEmpty ? [] : [table]) + parts
        guard path.count <= 2 else {
          throw ConfigError(
            line: value.line,
            message: "'\(path.joined(separator: "."))' is nested too deep: Ferry's settings are "
              + "keys of a table, like [receive] dir = … or receive.dir = …")
        }
        let (owner, key) = path.count == 2 ? (path[0], path[1]) : ("", path[0])
        if tables[owner] == nil {
          tables[owner] = [:]
          tableLines[owner] = value.line
        }
        guard tables[owner]?[key] == nil else {
          throw ConfigError(
            line: value.line, message: "'\(path.joined(separator: "."))' is given twice")
        }
        tables[owner]?[key] = value
      }
    }
  }

  /// Reads and parses the file at `path`.
  ///
  /// - Throws: ``ConfigError`` (line 0 when the file cannot be read).
  init(contentsOf path: String) throws(ConfigError) {
    // The system's words for why (as cat gives them), not Foundation's sentence.
    let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard descriptor >= 0 else {
      throw ConfigError(line: 0, message: systemWords(errno))
    }
    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    var status = stat()
    guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
      throw ConfigError(line: 0, message: "not a regular file")
    }
    let bytes: [UInt8]
    do {
      bytes = Array(try handle.read(upToCount: Self.maximumSize + 1) ?? Data())
    } catch {
      throw ConfigError(line: 0, message: "cannot be read")
    }
    try self.init(parsing: bytes)
  }
}

/// A value in a config file, with the line it is on.
struct ConfigValue: Sendable, Equatable {
  /// What the value is.
  enum Kind: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)
    case array([ConfigValue])
  }

  let kind: Kind
  /// The line it starts on (1-based).
  let line: Int

  /// The name of its kind, for messages.
  var kindName: String {
    switch kind {
    case .string: "a string"
    case .integer: "an integer"
    case .float: "a number"
    case .boolean: "true or false"
    case .array: "a list"
    }
  }
}

/// A mistake in a config file.
struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The line (1-based), or 0 for the file as a whole.
  let line: Int
  /// What is wrong, in words.
  let message: String

  var description: String { line > 0 ? "line \(line): \(message)" : message }
}
