import Foundation

/// Where and how a session receives resources (files).
public struct ReceiveOptions: Sendable {
  /// The destination directory. Files are staged in `destination/.ferry-partial/` (same
  /// filesystem) and, with ``relocate``, renamed into place under it.
  public var destination: URL
  /// What to do when a name is taken.
  public var conflictPolicy: ConflictPolicy
  /// Place verified files into ``destination`` (true), or hand them over where they were staged
  /// (`destination/.ferry-partial/NAME.received`) and report that URL for the application to
  /// move (MultipeerConnectivity's contract). Handed-over files are the application's: stale
  /// cleanup never removes them.
  public var relocate: Bool
  /// Staged files older than this are removed when an offer arrives (default: 7 days).
  public var staleAfter: Duration
  /// Paths, as offered, that this offer may not write: files already received under the same
  /// consent (an earlier part of the batch, or an attempt that failed after placing them). Such
  /// a file is answered ``FileStatus/skipped`` before any byte of it is sent — never written a
  /// second time, whatever the conflict policy. Compared as Swift strings do (canonically equivalent spellings match: a look-alike
  /// of a received name is skipped too). Empty by default.
  public var receivedBefore: Set<String> = []

  /// Receive into `destination`.
  public init(
    destination: URL, conflictPolicy: ConflictPolicy = .rename, relocate: Bool = true,
    staleAfter: Duration = .seconds(7 * 24 * 3600)
  ) {
    self.destination = destination
    self.conflictPolicy = conflictPolicy
    self.relocate = relocate
    self.staleAfter = staleAfter
  }
}
