import Ferry
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The outbox on disk: one file per send (`ID.json`, 0600) in a folder of Ferry's home, each
/// written whole, fsync'd and renamed into place (``AtomicFile``) before anyone is told it
/// changed — so that a daemon killed at any moment finds each send as it was last said to be.
/// A file that cannot be read as a send is moved aside to `corrupt/` (never deleted) and
/// reported. One process at a time; calls are not thread-safe (``Outbox`` serializes them).
package struct OutboxStore: Sendable {
  /// The folder.
  package let folder: URL

  /// The outbox in `folder` (made 0700 when first written).
  package init(folder: URL) {
    self.folder = folder
  }

  /// What loading found.
  package struct Loaded: Sendable {
    /// The sends, oldest first.
    package var entries: [OutboxEntry]
    /// Files that were not sends: where each was moved, and why.
    package var corrupt: [(path: String, reason: String)]
  }

  /// Reads every send in the folder (none when it does not exist); moves aside what cannot be
  /// read.
  ///
  /// - Throws: When the folder exists and cannot be listed.
  package func load() throws -> Loaded {
    var loaded = Loaded(entries: [], corrupt: [])
    let names: [String]
    do {
      names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
    } catch CocoaError.fileReadNoSuchFile {
      return loaded
    }
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    // Half-written files of a daemon stopped in the middle of a write (AtomicFile's).
    for name in names where name.hasPrefix(".") && name.contains(".json.tmp-") {
      unlink(folder.appendingPathComponent(name).path)
    }
    for name in names.sorted() where name.hasSuffix(".json") {
      let path = folder.appendingPathComponent(name).path
      let id = name.dropLast(5)
      do {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let entry = try decoder.decode(OutboxEntry.self, from: data)
        guard entry.id == id, DaemonID.isValid(id), entry.isWellFormed else {
          throw CocoaError(.fileReadCorruptFile)
        }
        guard entry.format <= OutboxEntry.format else {
          // Written by a newer ferry: left as it is.
          continue
        }
        loaded.entries.append(entry)
      } catch {
        let reason =
          error is DecodingError ? "it is not a send this version reads" : "it cannot be read"
        loaded.corrupt.append((setAside(name), reason))
      }
    }
    loaded.entries.sort { $0.created < $1.created }
    return loaded
  }

  /// Writes `entry` (durably, before returning).
  ///
  /// - Throws: The system's error when it cannot be written.
  package func save(_ entry: OutboxEntry) throws {
    try FerryHome.prepare(folder)
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    encoder.outputFormatting = [.sortedKeys]
    try AtomicFile.write(
      Array(try encoder.encode(entry)), to: path(of: entry.id), mode: 0o600)
  }

  /// Removes the send `id`'s file.
  package func remove(_ id: String) {
    unlink(path(of: id))
  }

  private func path(of id: String) -> String {
    folder.appendingPathComponent(id + ".json").path
  }

  /// Moves `name` to `corrupt/NAME.TIME`; where it went.
  private func setAside(_ name: String) -> String {
    let aside = folder.appendingPathComponent("corrupt", isDirectory: true)
    try? FerryHome.prepare(aside)
    let stamp = Int(Date().timeIntervalSince1970)
    let target = aside.appendingPathComponent("\(name).\(stamp)").path
    let source = folder.appendingPathComponent(name).path
    return rename(source, target) == 0 ? target : source
  }
}
