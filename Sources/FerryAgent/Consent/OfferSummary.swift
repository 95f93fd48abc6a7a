import Ferry
import Foundation

/// What a Ferry sender (`ferry send`) tells the receiver in the invitation context, so that the prompt can show
/// the file count, the first names, every top-level entry, how many hidden files and the total
/// size before anything is transferred. Untrusted on the receiving side: decoded leniently,
/// shown escaped and truncated.
public struct OfferSummary: Codable, Sendable, Equatable {
  /// Number of files (empty folders not included).
  public var files: Int
  /// Number of empty folders to create; nil (from senders before them) means none.
  public var folders: Int?
  /// How many of the files are streamed (standard input read as it is sent): their size is
  /// not known, and not in ``bytes``; nil means none.
  public var streamed: Int?
  /// Total bytes of the files whose size is known.
  public var bytes: UInt64
  /// The first few paths.
  public var names: [String]
  /// Every top-level entry (a path's first component), in order; nil when they do not fit
  /// in ``maximumRootBytes`` (the first offer is then asked about on its real files).
  public var roots: [String]?
  /// How many files and empty folders have a hidden component (one starting with `.`).
  public var hidden: Int?
  /// `ferry send --text`: a text sent alone (no files), shown by the receiver once accepted.
  public var text: String?

  /// The most bytes of UTF-8 a text may have (its JSON fits the context whatever it holds).
  public static let maximumTextBytes = 8 << 10

  /// How many names the summary carries.
  public static let shownNames = 5
  /// The most bytes of top-level names a summary carries.
  public static let maximumRootBytes = 16 << 10

  /// The summary of `items`, files with their sizes, in order.
  public init(items: [(path: String, size: UInt64)]) {
    var builder = Builder()
    for item in items { builder.add(item.path, size: item.size) }
    self = builder.summary
  }

  /// Sums up a batch one file at a time, holding only what the summary shows (a tree of any
  /// size is announced without holding its paths).
  public struct Builder: Sendable {
    private var files = 0
    private var folders = 0
    private var streamed = 0
    private var bytes: UInt64 = 0
    private var names: [String] = []
    private var overview = TreeOverview()

    /// Nothing counted yet.
    public init() {}

    /// Counts one more file, or empty folder (which is counted apart and named in no list but
    /// its top-level entry's; a hidden one counts as hidden), or streamed file (of no size yet).
    /// Sizes are each at most 2^63 and the caller stops above 2^62 in all, so the sum cannot
    /// overflow.
    public mutating func add(
      _ path: String, size: UInt64, isFolder: Bool = false, isStreamed: Bool = false
    ) {
      if isStreamed { streamed += 1 }
      if isFolder {
        folders += 1
        overview.add(path)
        return
      }
      files += 1
      bytes += size
      if names.count < OfferSummary.shownNames { names.append(path) }
      overview.add(path)
    }

    /// Bytes counted so far.
    public var totalBytes: UInt64 { bytes }

    /// The summary of every file counted.
    public var summary: OfferSummary {
      OfferSummary(
        files: files, folders: folders, streamed: streamed, bytes: bytes, names: names,
        roots: overview.roots.reduce(0) { $0 + $1.utf8.count } <= OfferSummary.maximumRootBytes
          ? overview.roots : nil,
        hidden: overview.hidden)
    }
  }

  private init(
    files: Int, folders: Int, streamed: Int, bytes: UInt64, names: [String], roots: [String]?,
    hidden: Int
  ) {
    (self.files, self.bytes, self.names, self.roots, self.hidden) = (
      files, bytes, names, roots, hidden
    )
    self.folders = folders > 0 ? folders : nil
    self.streamed = streamed > 0 ? streamed : nil
  }

  /// Files and empty folders together: the entries of the batch's offers.
  public var entries: Int { files + (folders ?? 0) }

  /// The summary of a text sent alone.
  public init(text: String) {
    (files, bytes, names, roots, hidden) = (0, 0, [], [], 0)
    self.text = text
  }

  /// The context bytes (JSON).
  public var encoded: [UInt8] {
    // Sorted keys: the same summary is the same bytes in every invitation of a send.
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return Array((try? encoder.encode(self)) ?? Data())
  }

  /// Decodes a received context; nil when it is not a summary, or not a plausible one: a
  /// negative count, more bytes than an offer may carry (2^62), more names than it says or
  /// than a summary holds, a name longer than a path may be, more top-level entries or hidden
  /// files than files. A peer's numbers never reach the arithmetic below unchecked.
  public static func decode(_ bytes: [UInt8]) -> OfferSummary? {
    guard let summary = try? JSONDecoder().decode(OfferSummary.self, from: Data(bytes)),
      (0...Int(Int32.max)).contains(summary.files),
      (0...Int(Int32.max)).contains(summary.folders ?? 0),
      (0...summary.files).contains(summary.streamed ?? 0),
      summary.bytes <= ProtocolLimits.maximumOfferBytes,
      summary.names.count <= min(summary.files, shownNames),
      summary.names.allSatisfy({ $0.utf8.count <= RelativePath.maximumBytes }),
      (summary.roots?.count ?? 0) <= summary.entries,
      (summary.roots ?? []).allSatisfy({ $0.utf8.count <= RelativePath.maximumBytes }),
      (0...summary.entries).contains(summary.hidden ?? 0),
      // A text comes alone, and is short.
      summary.text.map({ $0.utf8.count <= maximumTextBytes && summary.entries == 0 }) ?? true
    else { return nil }
    return summary
  }

  /// What the offers admitted under a summary added up to so far.
  public struct Tally: Sendable, Equatable {
    /// Files (empty folders not included).
    public var files = 0
    /// Empty folders.
    public var folders = 0
    /// Files of unknown size (streamed).
    public var streamed = 0
    /// Bytes of the files whose size is known.
    public var bytes: UInt64 = 0
    /// Files and empty folders with a hidden component.
    public var hidden = 0

    /// Nothing counted yet.
    public init() {}

    /// A tally of these numbers.
    public init(files: Int, folders: Int, streamed: Int, bytes: UInt64, hidden: Int) {
      (self.files, self.folders, self.streamed, self.bytes, self.hidden) = (
        files, folders, streamed, bytes, hidden
      )
    }

    /// Both tallies added.
    public static func + (lhs: Tally, rhs: Tally) -> Tally {
      Tally(
        files: lhs.files + rhs.files, folders: lhs.folders + rhs.folders,
        streamed: lhs.streamed + rhs.streamed, bytes: lhs.bytes + rhs.bytes,
        hidden: lhs.hidden + rhs.hidden)
    }
  }

  /// Whether an offer's real files are part of what this summary announced, after the offers
  /// of the same batch admitted before it (`before`; a batch of more files than one offer
  /// carries comes as consecutive offers): the first one starts with the names the summary
  /// showed, in order (all of them: a summary that shows fewer names than it could hides
  /// nothing behind "… and N more"); together they have no more files, empty folders
  /// (`folders`, the offer's paths that are folders), bytes or hidden files than announced;
  /// nothing lies outside the top-level entries it listed; no more files of unknown size
  /// (`streamed`) than it said — a yes to a known size is never a yes to an unknown one. What
  /// a person said yes to is then what is written.
  ///
  /// - Returns: The tally with this offer counted, or nil when it is not admitted.
  public func admits(
    _ entries: [(path: String, size: UInt64)], folders: Set<String> = [],
    streamed: Set<String> = [], after before: Tally = Tally()
  ) -> Tally? {
    guard let roots, let hidden, !entries.isEmpty,
      names.count == min(self.files, Self.shownNames)
    else { return nil }
    let files = entries.filter { !folders.contains($0.path) }
    // The batch's first files are the names shown, in order, whichever parts they come in
    // (empty folders may come first). Byte for byte: two spellings that look alike are not
    // the name that was shown.
    if before.files < names.count {
      let shown = names[before.files..<min(names.count, before.files + files.count)]
      guard files.prefix(shown.count).map({ Array($0.path.utf8) }) == shown.map({ Array($0.utf8) })
      else { return nil }
    }
    // Each size is ≤ 2^62 and an offer's total too (the library checked): no overflow.
    let overview = TreeOverview(entries.map(\.path))
    let tally =
      before
      + Tally(
        files: files.count, folders: entries.count - files.count,
        streamed: files.count { streamed.contains($0.path) },
        bytes: files.reduce(0) { $0 + $1.size }, hidden: overview.hidden)
    let listed = Set(roots.map { Array($0.utf8) })
    guard tally.files <= self.files, tally.folders <= self.folders ?? 0,
      tally.streamed <= self.streamed ?? 0, tally.bytes <= bytes,
      tally.hidden <= hidden, overview.roots.allSatisfy({ listed.contains(Array($0.utf8)) })
    else { return nil }
    return tally
  }
}
