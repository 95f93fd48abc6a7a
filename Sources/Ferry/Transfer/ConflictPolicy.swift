import CFerrySystem
import Foundation

/// What to do when a received file's name is already taken in the destination.
public enum ConflictPolicy: String, Hashable, Sendable, CaseIterable {
  /// Keep both: the new file becomes `name (1).ext` (or the next free number). The default.
  case rename
  /// Replace the existing file.
  case overwrite
  /// Keep the existing file (or whatever is at the name, or in the way of a folder) and
  /// discard the received one. Only a file the same sender placed there is left out before it
  /// is sent (and reported `skipped` to it); any other is received, discarded and reported
  /// `stored` to the sender, which so learns nothing of names it did not place.
  case skip
}
