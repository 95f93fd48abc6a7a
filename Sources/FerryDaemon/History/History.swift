import Ferry
import Foundation
import Synchronization

/// What the daemon received and sent, newest first, kept across restarts in one file of
/// Ferry's home (`history.json`, 0600, rewritten whole and fsync'd at each entry) and bounded
/// (the oldest entries go first). A file that cannot be read is moved aside and the history
/// starts empty. Any thread.
package final class History: Sendable {
  /// One transfer.
  package struct Entry: Codable, Sendable, Equatable {
    /// Which way it went.
    package enum Direction: String, Codable, Sendable {
      case received, sent
    }

    /// How it ended.
    package enum Outcome: String, Codable, Sendable {
      case done, failed, declined, cancelled
    }

    package let id: String
    package let direction: Direction
    /// The peer's name.
    package let peer: String
    /// Its key, when it proved one.
    package let fingerprint: String?
    /// `ferry`, `localsend` or `web`.
    package let `protocol`: String
    package let files: Int
    package let bytes: UInt64
    package let outcome: Outcome
    package let at: Date

    /// An entry.
    package init(
      direction: Direction, peer: String, fingerprint: String?, protocol: String, files: Int,
      bytes: UInt64, outcome: Outcome, at: Date = Date(), id: String = DaemonID.new()
    ) {
      (self.id, self.direction, self.peer, self.fingerprint, self.protocol) = (
        id, direction, peer, fingerprint, `protocol`
      )
      (self.files, self.bytes, self.outcome, self.at) = (files, bytes, outcome, at)
    }
  }

  /// The file.
  package let path: String
  /// The most entries kept.
  package let limit: Int
  private let entries: Mutex<[Entry]>

  /// The history in `path`, keeping `limit` entries; what could not be read is moved to
  /// `PATH.corrupt`.
  package init(path: String, limit: Int) {
    self.path = path
    self.limit = limit
    var loaded: [Entry] = []
    if let data = FileManager.default.contents(atPath: path) {
      let decoder = JSONDecoder()
      decoder.dateDecodingStrategy = .iso8601
      if let decoded = try? decoder.decode([Entry].self, from: data) {
        loaded = Array(decoded.prefix(limit))
      } else {
        rename(path, path + ".corrupt")
      }
    }
    entries = Mutex(loaded)
  }

  /// Adds `entry` first, and writes the history.
  package func add(_ entry: Entry) {
    // Written under the lock: two entries at once never write their files out of order.
    entries.withLock { entries in
      entries.insert(entry, at: 0)
      if entries.count > limit { entries.removeLast(entries.count - limit) }
      write(entries)
    }
  }

  /// The newest `count` entries.
  package func newest(_ count: Int) -> [Entry] {
    entries.withLock { Array($0.prefix(count)) }
  }

  private func write(_ snapshot: [Entry]) {
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    guard let data = try? encoder.encode(snapshot) else { return }
    let folder = URL(fileURLWithPath: (path as NSString).deletingLastPathComponent)
    try? FerryHome.prepare(folder)
    // A lost write loses history, never a transfer: the next entry writes it all again.
    try? AtomicFile.write(Array(data), to: path, mode: 0o600)
  }
}
