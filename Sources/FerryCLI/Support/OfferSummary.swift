import Ferry
import Foundation

/// What `ferry send` tells the receiver in the invitation context, so that the prompt can show
/// the file count, the first names, every top-level entry, how many hidden files and the total
/// size before anything is transferred. Untrusted on the receiving side: decoded leniently,
/// shown escaped and truncated.
struct OfferSummary: Codable, Sendable, Equatable {
  /// Number of files.
  var files: Int
  /// Total bytes.
  var bytes: UInt64
  /// The first few paths.
  var names: [String]
  /// Every top-level entry (a path's first component), in order; nil when they do not fit
  /// in ``maximumRootBytes`` (the first offer is then asked about on its real files).
  var roots: [String]?
  /// How many files have a hidden component (one starting with `.`).
  var hidden: Int?
  /// `ferry send --text`: a text sent alone (no files), shown by the receiver once accepted.
  var text: String?

  /// The most bytes of UTF-8 a text may have (its JSON fits the context whatever it holds).
  static let maximumTextBytes = 8 << 10

  /// How many names the summary carries.
  static let shownNames = 5
  /// The most bytes of top-level names a summary carries.
  static let maximumRootBytes = 16 << 10

  init(items: [(path: String, size: UInt64)]) {
    files = items.count
    bytes = items.reduce(0) { $0 + $1.size }
    names = items.prefix(Self.shownNames).map(\.path)
    let overview = TreeOverview(items.map(\.path))
    roots =
      overview.roots.reduce(0) { $0 + $1.utf8.count } <= Self.maximumRootBytes
      ? overview.roots : nil
    hidden = overview.hidden
  }

  /// The summary of a text sent alone.
  init(text: String) {
    (files, bytes, names, roots, hidden) = (0, 0, [], [], 0)
    self.text = text
  }

  /// The summary of `items`, sized with stat(2) (an unreadable file counts as empty here and
  /// fails when it is sent).
  init(items: [ResourceItem]) {
    self.init(
      items: items.map { item in
        var status = stat()
        return (item.path, stat(item.url.path, &status) == 0 ? UInt64(status.st_size) : 0)
      })
  }

  /// The context bytes (JSON).
  var encoded: [UInt8] {
    // Sorted keys: the same summary is the same bytes in every invitation of a send.
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return Array((try? encoder.encode(self)) ?? Data())
  }

  /// Decodes a received context; nil when it is not a summary, or not a plausible one: a
  /// negative count, more bytes than an offer may carry (2^62), more names than it says or
  /// than a summary holds, a name longer than a path may be, more top-level entries or hidden
  /// files than files. A peer's numbers never reach the arithmetic below unchecked.
  static func decode(_ bytes: [UInt8]) -> OfferSummary? {
    guard let summary = try? JSONDecoder().decode(OfferSummary.self, from: Data(bytes)),
      (0...Int(Int32.max)).contains(summary.files),
      summary.bytes <= ProtocolLimits.maximumOfferBytes,
      summary.names.count <= min(summary.files, shownNames),
      summary.names.allSatisfy({ $0.utf8.count <= RelativePath.maximumBytes }),
      (summary.roots?.count ?? 0) <= summary.files,
      (summary.roots ?? []).allSatisfy({ $0.utf8.count <= RelativePath.maximumBytes }),
      (0...summary.files).contains(summary.hidden ?? 0),
      // A text comes alone, and is short.
      summary.text.map({ $0.utf8.count <= maximumTextBytes && summary.files == 0 }) ?? true
    else { return nil }
    return summary
  }

  /// Whether an offer's real files are what this summary announced: as many files, no more
  /// bytes, the names it showed, in order, first (all of them: a summary that shows fewer
  /// names than it could hides nothing behind "… and N more"), nothing outside the top-level
  /// entries it listed, and no more hidden files than it said. What a person said yes to is
  /// then what is written.
  func admits(_ files: [(path: String, size: UInt64)]) -> Bool {
    guard files.count == self.files, files.reduce(0, { $0 + $1.size }) <= bytes,
      names.count == min(files.count, Self.shownNames),
      // Byte for byte: two spellings that look alike are not the name that was shown.
      files.prefix(names.count).map({ Array($0.path.utf8) }) == names.map({ Array($0.utf8) }),
      let roots, let hidden
    else { return false }
    let overview = TreeOverview(files.map(\.path))
    let listed = Set(roots.map { Array($0.utf8) })
    return overview.hidden <= hidden
      && overview.roots.allSatisfy { listed.contains(Array($0.utf8)) }
  }
}
