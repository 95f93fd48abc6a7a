import Foundation
import Synchronization

/// The peers this installation has met, kept in `peers.json` in ``FerryHome``, one entry per
/// key: fingerprints identify, names are labels.
///
/// Every key that was accepted is remembered (trust on first use), so that it is `known` the
/// next time. A *name* is pinned only by the user: the name of a trusted peer (``trust(_:name:)``,
/// `ferry trust FPR --name N`) belongs to that key, and another key that comes with it is
/// reported as a changed key (``Status/changedKey(previous:)``). Two keys merely seen under one
/// name are two machines.
///
/// The file is read again only when it changed (its inode, size or modification time), and
/// written back atomically under a file lock, so several ferry processes can share it. It stays
/// bounded: trusted peers are kept for ever, and of the others the ``maximumSeenPeers`` seen
/// most recently.
public final class KnownPeers: Sendable {
  /// One known peer.
  public struct Entry: Codable, Hashable, Sendable {
    /// The fingerprint, 64 upper-case hex digits.
    public var fingerprint: String
    /// The display name last seen with this fingerprint; for a trusted peer, the name pinned
    /// to it (given to ``KnownPeers/trust(_:name:)``, or the one it had when it was trusted).
    public var name: String
    /// When it was first seen.
    public var firstSeen: Date
    /// When it was last seen.
    public var lastSeen: Date
    /// Whether the user marked it trusted (`ferry trust`).
    public var trusted: Bool
    /// Where this machine last reached it as a receiver (`HOST:PORT`, `[IPv6]:PORT`), most
    /// recent first, at most ``KnownPeers/maximumAddresses``; nil when never reached
    /// (``recordReached(_:at:on:)``). Tried when discovery does not find it: the TLS
    /// handshake still pins its key.
    public var addresses: [String]?
    /// When it was last reached at ``addresses``.
    public var reachedAt: Date?

    /// An entry with no remembered address.
    public init(
      fingerprint: String, name: String, firstSeen: Date, lastSeen: Date, trusted: Bool,
      addresses: [String]? = nil, reachedAt: Date? = nil
    ) {
      self.fingerprint = fingerprint
      self.name = name
      self.firstSeen = firstSeen
      self.lastSeen = lastSeen
      self.trusted = trusted
      self.addresses = addresses
      self.reachedAt = reachedAt
    }
  }

  /// What Ferry knows about a peer presenting itself.
  public enum Status: Hashable, Sendable {
    /// This fingerprint has been seen before (`trusted` if the user said so).
    case known(trusted: Bool)
    /// The fingerprint is not known, and its name is not pinned to another key. (Keys merely
    /// seen may carry the same name: another machine of that name is another machine.)
    case new
    /// The display name is pinned to another key — a trusted peer's name — and this key does
    /// not hold it: the peer reinstalled, or someone is impersonating it. `previous` is the
    /// fingerprint the name is pinned to. Reported whether or not this key is itself known.
    case changedKey(previous: Fingerprint)
    /// The display name is not pinned, but it looks like one that is (`known`, pinned to
    /// fingerprint `previous`): it differs only by invisible characters, spacing, letter case
    /// or compatibility forms (``DisplayText/skeleton(_:)``). A different peer — possibly one
    /// made to pass for the trusted one.
    case similarName(known: String, previous: Fingerprint)
  }

  /// The most peers kept that the user did not trust: beyond them, the ones seen longest ago
  /// are forgotten (trusted peers never are).
  public static let maximumSeenPeers = 256

  struct File: Codable {
    var version = 1
    var peers: [Entry] = []
    /// Addresses the user named (`ferry peers add`); nil when there are none.
    var named: [NamedAddress]?
  }

  /// The peers file.
  public let path: String
  private let lockPath: String
  /// The file as last read or written, with what identified its version on disk.
  private let cache = Mutex<Snapshot?>(nil)

  /// Uses `peers.json` in `directory` (created on first write).
  public init(directory: URL = FerryHome.defaultDirectory) {
    path = directory.appendingPathComponent("peers.json").path
    lockPath = directory.appendingPathComponent(".lock").path
  }

  /// Every known peer, most recently seen first.
  ///
  /// - Throws: ``IdentityError`` when the file exists but cannot be read or parsed.
  public func all() throws(IdentityError) -> [Entry] {
    try load().peers.sorted { $0.lastSeen > $1.lastSeen }
  }

  /// What is known about `peer`: whether its name is pinned to another key (exactly, or as it
  /// looks) first — a known key does not pass under a trusted peer's name — then its
  /// fingerprint.
  ///
  /// Reads the file only when it changed since it was last read; blocking file I/O all the
  /// same (it is opened and `fstat(2)`ed), so not for an event loop.
  ///
  /// - Throws: ``IdentityError`` when the file exists but cannot be read or parsed.
  public func status(of peer: PeerID) throws(IdentityError) -> Status {
    try load().status(of: peer)
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
    try load().peers.filter { $0.trusted || !trustedOnly }
      .compactMap { try? Fingerprint(parsing: $0.fingerprint) }
      .filter { $0.hasPrefix(prefix) }
  }

  /// Records that `peer` was seen now: adds it (untrusted) or updates its last-seen time and,
  /// for a peer not trusted, its name — unless that name (or one that looks like it) is pinned
  /// to another key: a known key never takes over a trusted peer's name. A trusted peer keeps
  /// its pinned name. Beyond ``maximumSeenPeers`` untrusted peers, the one seen longest ago is
  /// forgotten.
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  public func recordSeen(_ peer: PeerID, at date: Date = Date()) throws(IdentityError) {
    try update { peers, snapshot in
      let hex = peer.fingerprint.hexString
      if let index = peers.firstIndex(where: { $0.fingerprint == hex }) {
        if !peers[index].trusted,
          !snapshot.isPinned(peer.displayName, toAnotherKeyThan: peer.fingerprint)
        {
          peers[index].name = peer.displayName
        }
        peers[index].lastSeen = date
      } else {
        peers.append(
          Entry(
            fingerprint: hex, name: peer.displayName, firstSeen: date, lastSeen: date,
            trusted: false))
      }
    }
  }

  /// Marks `fingerprint` trusted, adding it if unknown (with `name`, or "unnamed"), and pins
  /// `name` to it (without `name`, the name it is known by).
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  public func trust(_ fingerprint: Fingerprint, name: String? = nil) throws(IdentityError) {
    try update { peers, _ in
      let hex = fingerprint.hexString
      if let index = peers.firstIndex(where: { $0.fingerprint == hex }) {
        peers[index].trusted = true
        if let name { peers[index].name = name }
      } else {
        let now = Date()
        peers.append(
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
    try update { peers, _ in
      let before = peers.count
      peers.removeAll { $0.fingerprint == fingerprint.hexString }
      removed = peers.count != before
    }
    return removed
  }

  /// `peers` without the untrusted peers seen longest ago, beyond ``maximumSeenPeers``.
  static func bounded(_ peers: [Entry]) -> [Entry] {
    let seen = peers.filter { !$0.trusted }
    guard seen.count > maximumSeenPeers else { return peers }
    let kept = Set(
      seen.sorted { $0.lastSeen > $1.lastSeen }.prefix(maximumSeenPeers).map(\.fingerprint))
    return peers.filter { $0.trusted || kept.contains($0.fingerprint) }
  }

  /// The file's content: the cached snapshot while the file on disk is the one it was made
  /// from, read and parsed again otherwise.
  func load() throws(IdentityError) -> Snapshot {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      let failure = errno
      guard failure == ENOENT else {
        throw .unreadable(path: path, reason: String(cString: strerror(failure)))
      }
      let empty = Snapshot(stamp: nil, peers: [], named: nil)
      cache.withLock { $0 = empty }
      return empty
    }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      throw .unreadable(path: path, reason: String(cString: strerror(errno)))
    }
    let stamp = Stamp(info)
    if let cached = cache.withLock({ $0 }), cached.stamp == stamp { return cached }
    let data: Data
    do {
      data = try FileHandle(fileDescriptor: fd, closeOnDealloc: false).readToEnd() ?? Data()
    } catch {
      throw .unreadable(path: path, reason: "\(error)")
    }
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    let file: File
    do {
      file = try decoder.decode(File.self, from: data)
    } catch {
      throw .corrupted(path: path, reason: "not a Ferry peers file")
    }
    let snapshot = Snapshot(stamp: stamp, peers: file.peers, named: file.named)
    cache.withLock { $0 = snapshot }
    return snapshot
  }

  /// Changes the peers under the file lock (given the file as it is, and what is known of
  /// it), bounds them and writes them back.
  func update(_ change: (inout [Entry], Snapshot) -> Void) throws(IdentityError) {
    try updateFile { file, snapshot in change(&file.peers, snapshot) }
  }

  /// Changes the whole file under the lock (its peers and named addresses), bounds it and
  /// writes it back.
  func updateFile(_ change: (inout File, Snapshot) -> Void) throws(IdentityError) {
    let directory = URL(fileURLWithPath: (path as NSString).deletingLastPathComponent)
    try FerryHome.prepare(directory)
    do {
      try AtomicFile.withLock(lockPath) {
        let snapshot = try load()
        var file = File(peers: snapshot.peers, named: snapshot.named)
        change(&file, snapshot)
        file.peers = Self.bounded(file.peers)
        if file.named?.isEmpty == true { file.named = nil }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(Array(try encoder.encode(file)) + [0x0A], to: path, mode: 0o600)
        // What was written is what the next read would find (nobody else writes under the lock).
        var info = stat()
        let stamp = stat(path, &info) == 0 ? Stamp(info) : nil
        let written = stamp.map { Snapshot(stamp: $0, peers: file.peers, named: file.named) }
        cache.withLock { $0 = written }
      }
    } catch let error as IdentityError {
      throw error
    } catch {
      throw .cannotWrite(path: path, reason: "\(error)")
    }
  }
}

extension KnownPeers {
  /// What identifies one version of the file on disk: it is replaced (a new inode) at every
  /// write, and its size or modification time change with it.
  struct Stamp: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var seconds: Int64
    var nanoseconds: Int64

    init(_ info: stat) {
      device = UInt64(info.st_dev)
      inode = UInt64(info.st_ino)
      size = Int64(info.st_size)
      seconds = Int64(info.st_mtim.tv_sec)
      nanoseconds = Int64(info.st_mtim.tv_nsec)
    }
  }

  /// A name pinned to a key: a trusted peer's, with its look (``DisplayText/skeleton(_:)``)
  /// worked out once.
  fileprivate struct Pin: Sendable {
    var name: String
    var skeleton: String
    var fingerprint: Fingerprint
  }

  /// The file's peers, indexed by fingerprint, with the pinned names.
  struct Snapshot: Sendable {
    let stamp: Stamp?
    let peers: [Entry]
    let named: [NamedAddress]?
    let index: [String: Int]
    fileprivate let pins: [Pin]

    init(stamp: Stamp?, peers: [Entry], named: [NamedAddress]?) {
      self.stamp = stamp
      self.peers = peers
      self.named = named
      var index: [String: Int] = [:]
      for (position, entry) in peers.enumerated() where index[entry.fingerprint] == nil {
        index[entry.fingerprint] = position
      }
      self.index = index
      pins = peers.compactMap { entry in
        guard entry.trusted, let fingerprint = try? Fingerprint(parsing: entry.fingerprint)
        else { return nil }
        return Pin(
          name: entry.name, skeleton: DisplayText.skeleton(entry.name), fingerprint: fingerprint)
      }
    }

    /// See ``KnownPeers/status(of:)``.
    func status(of peer: PeerID) -> Status {
      let own = index[peer.fingerprint.hexString].map { peers[$0] }
      let name = peer.displayName
      // A name pinned to several keys (two trusted machines of one name) is held by each.
      if pins.contains(where: { $0.fingerprint == peer.fingerprint && $0.name == name }) {
        return .known(trusted: true)
      }
      if let pin = pins.first(where: { $0.name == name }) {
        return .changedKey(previous: pin.fingerprint)
      }
      if !pins.isEmpty {
        let skeleton = DisplayText.skeleton(name)
        let alike = pins.filter { $0.skeleton == skeleton }
        if let pin = alike.first, !alike.contains(where: { $0.fingerprint == peer.fingerprint }) {
          return .similarName(known: pin.name, previous: pin.fingerprint)
        }
      }
      guard let own else { return .new }
      return .known(trusted: own.trusted)
    }

    /// Whether `name`, or one that looks like it, is pinned to a key other than `fingerprint`.
    func isPinned(_ name: String, toAnotherKeyThan fingerprint: Fingerprint) -> Bool {
      guard !pins.isEmpty else { return false }
      let skeleton = DisplayText.skeleton(name)
      return pins.contains { $0.fingerprint != fingerprint && $0.skeleton == skeleton }
    }
  }
}
