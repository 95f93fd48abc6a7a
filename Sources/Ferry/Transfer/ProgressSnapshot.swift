import Foundation

/// A point-in-time view of a transfer's progress, for observers (Linux has no KVO on
/// `Progress`).
public struct ProgressSnapshot: Hashable, Sendable {
  /// Bytes done (sent, or written and hashed).
  public let bytes: Int64
  /// Bytes in the whole transfer; while ``totalIsKnown`` is false, only those known so far.
  public let total: Int64
  /// Whether ``total`` is the transfer's size: false while a streamed file
  /// (``ResourceItem/isStreamed``) is still open, whose size is known only at its end.
  public let totalIsKnown: Bool
  /// Recent rate, bytes per second.
  public let bytesPerSecond: Double
  /// Files finished.
  public let filesDone: Int
  /// Files in the transfer.
  public let fileCount: Int
  /// The file in progress (or the one that just finished), if any.
  public let currentFile: String?
  /// Bytes of ``currentFile`` done.
  public let currentFileBytes: Int64
  /// The size of ``currentFile`` in bytes; while ``currentFileSizeIsKnown`` is false (a
  /// streamed file still open), the bytes it has so far.
  public let currentFileSize: Int64
  /// Whether ``currentFileSize`` is the current file's size.
  public let currentFileSizeIsKnown: Bool

  /// A snapshot with the given figures (for observers that combine or replay progress).
  public init(
    bytes: Int64, total: Int64, bytesPerSecond: Double, filesDone: Int, fileCount: Int,
    currentFile: String? = nil, currentFileBytes: Int64 = 0, currentFileSize: Int64 = 0,
    totalIsKnown: Bool = true, currentFileSizeIsKnown: Bool = true
  ) {
    self.totalIsKnown = totalIsKnown
    self.currentFileSizeIsKnown = currentFileSizeIsKnown
    self.bytes = bytes
    self.total = total
    self.bytesPerSecond = bytesPerSecond
    self.filesDone = filesDone
    self.fileCount = fileCount
    self.currentFile = currentFile
    self.currentFileBytes = currentFileBytes
    self.currentFileSize = currentFileSize
  }
}
