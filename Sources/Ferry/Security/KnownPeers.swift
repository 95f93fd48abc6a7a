import Foundation

/// The peers this installation has met, kept in `peers.json` in ``FerryHome``: trust on first
/// use, and a loud signal when a known name arrives with another key.
///
/// Every operation reads the file afresh and writes it back atomically under a file lock, so
/// several ferry processes can share it.
public final class KnownPeers: Sendable {
  /// One known peer.
  public struct Entry: Codable, Hashable, Sendable {
    /// The fingerprint, 64 upper-case hex digits.
    public var fingerprint: String
    /// The display name last seen with this fingerprint.
    public var name: String
    /// When it was first seen.
    public var firstSeen: Date
    /// When it was last seen.
    public var lastSeen: Date
    /// Whether the user marked it trusted (`ferry trust`).
    public var trusted: Bool
  }

  /// What Ferry knows about a peer presenting itself.
  public enum Status: Hashable, Sendable {
    /// This fingerprint has been seen before (`trusted` if the user said so).
    case known(trusted: Bool)
    /// Neither the fingerprint nor the name is known.
    case new
    /// The display name is known, with a different fingerprint: the peer reinstalled, or
    /// someone is impersonating it. `previous` is the fingerprint the name had.
    case changedKey(previous: Fingerprint)
    /// The fingerprint is new and the display name is not known, but it looks like one that
    /// is (`known`, with fingerprint `previous`): it differs only by invisible characters,
    /// spacing, letter case or compatibility forms (``DisplayText/skeleton(_:)``). A different
    /// peer — possibly one made to pass for the known one.
    case similarName(known: String, previous: Fingerprint)
  }

  private struct File: Codable {
    var version = 1
    var peers: [Entry] = []
  }

  /// The peers file.
  public let path: String
  private let lockPath: String

  /// Uses `peers.json` in `directory` (created on first write).
  public init(directory: URL = FerryHome.defaultDirectory) {
    path = directory.appendingPathComponent("peers.json").path
    lockPath = directory.appendingPathComponent(".lock").path
  }

  /// Every known peer, most recently seen first.
  ///
  /// - Throws: ``IdentityError`` when the file exists but cannot be read or parsed.
  public func all() throws(IdentityError) -> [Entry] {
    try read().peers.sorted { $0.lastSeen > $1.lastSeen }
  }

  /// What is known about `peer`: its fingerprint first; then whether its name (exactly, or
  /// as it looks) belongs to a known peer with another key.
  ///
  /// - Throws: ``IdentityError`` when the file exists but cannot be read or parsed.
  public func status(of peer: PeerID) throws(IdentityError) -> Status {
    let peers = try read().peers
    let hex = peer.fingerprint.hexString
    // The name first: a known key that takes a name another key holds is not "known" under
    // that name — it would pass for the other peer.
    let others = peers.filter { $0.fingerprint != hex }
    if let entry = others.first(where: { $0.name == peer.displayName }),
      let previous = try? Fingerprint(parsing: entry.fingerprint)
    {
      return .changedKey(previous: previous)
    }
    let skeleton = DisplayText.skeleton(peer.displayName)
    if let entry = others.first(where: { DisplayText.skeleton($0.name) == skeleton }),
      let previous = try? Fingerprint(parsing: entry.fingerprint)
    {
      return .similarName(known: entry.name, previous: previous)
    }
    if let entry = peers.first(where: { $0.fingerprint == hex }) {
      return .known(trusted: entry.trusted)
    }
    return .new
  }

  /// The known fingerprints that start with `prefix` (hexadecimal; spaces and colons
  /// ignored): how a short prefix typed by a user resolves to a full fingerprint — only when
  /// exactly one matches.
  ///
  /// - Parameter trustedOnly: Only peers the user trusted (``trust(_:name:)``): a prefix too
  ///   short to stand for a key on its own should not resolve to a peer that was merely seen.
  /// - Throws: ``IdentityError`` when the file exists but cannot be read or parsed.
  public func fingerprints(
    startingWith prefix: String, trustedOnly: Bool = false
  ) throws(IdentityError) -> [Fingerprint] {
    try read().peers.filter { $0.trusted || !trustedOnly }
      .compactMap { try? Fingerprint(parsing: $0.fingerprint) }
      .filter { $0.hasPrefix(prefix) }
  }

  /// Records that `peer` was seen now: adds it (untrusted) or updates its last-seen time and
  /// its name — unless another key holds that name, or one that looks like it: a known key
  /// never takes over another peer's name.
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  public func recordSeen(_ peer: PeerID, at date: Date = Date()) throws(IdentityError) {
    try update { file in
      let hex = peer.fingerprint.hexString
      if let index = file.peers.firstIndex(where: { $0.fingerprint == hex }) {
        let skeleton = DisplayText.skeleton(peer.displayName)
        let taken = file.peers.contains {
          $0.fingerprint != hex && DisplayText.skeleton($0.name) == skeleton
        }
        if !taken { file.peers[index].name = peer.displayName }
        file.peers[index].lastSeen = date
      } else {
        file.peers.append(
          Entry(
            fingerprint: hex, name: peer.displayName, firstSeen: date, lastSeen: date,
            trusted: false))
      }
    }
  }

  /// Marks `fingerprint` trusted, adding it if unknown (with `name`, or "unnamed").
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  public func trust(_ fingerprint: Fingerprint, name: String? = nil) throws(IdentityError) {
    try update { file in
      let hex = fingerprint.hexString
      if let index = file.peers.firstIndex(where: { $0.fingerprint == hex }) {
        file.peers[index].trusted = true
        if let name { file.peers[index].name = name }
      } else {
        let now = Date()
        file.peers.append(
          Entry(
            fingerprint: hex, name: name ?? "unnamed", firstSeen: now, lastSeen: now, trusted: true)
        )
      }
    }
  }

  /// Removes `fingerprint`; returns whether it was known.
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  @discardableResult
  public func forget(_ fingerprint: Fingerprint) throws(IdentityError) -> Bool {
    var removed = false
    try update { file in
      let before = file.peers.count
      file.peers.removeAll { $0.fingerprint == fingerprint.hexString }
      removed = file.peers.count != before
    }
    return removed
  }

  private func read() throws(IdentityError) -> File {
    guard FileManager.default.fileExists(atPath: path) else { return File() }
    guard let data = FileManager.default.contents(atPath: path) else {
      throw .unreadable(path: path, reason: String(cString: strerror(errno)))
    }
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    do {
      return try decoder.decode(File.self, from: data)
    } catch {
      throw .corrupted(path: path, reason: "not a Ferry peers file")
    }
  }

  private func update(_ change: (inout File) -> Void) throws(IdentityError) {
    let directory = URL(fileURLWithPath: (path as NSString).deletingLastPathComponent)
    try FerryHome.prepare(directory)
    do {
      try AtomicFile.withLock(lockPath) {
        var file = try read()
        change(&file)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(Array(try encoder.encode(file)) + [0x0A], to: path, mode: 0o600)
      }
    } catch let error as IdentityError {
      throw error
    } catch {
      throw .cannotWrite(path: path, reason: "\(error)")
    }
  }
}
