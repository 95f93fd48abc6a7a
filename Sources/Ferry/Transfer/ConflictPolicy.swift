import CFerrySystem
import Foundation

/// What to do when a received file's name is already taken in the destination.
public enum ConflictPolicy: String, Hashable, Sendable, CaseIterable {
  /// Keep both: the new file becomes `name (1).ext` (or the next free number). The default.
  case rename
  /// Replace the existing file.
  case overwrite
  /// Keep the existing file and discard the received one.
  case skip
}
