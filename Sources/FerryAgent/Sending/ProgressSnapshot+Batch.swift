import Ferry

extension ProgressSnapshot {
  /// This part's progress as the whole batch's: the parts before it settled `files` files
  /// of `bytes` bytes, and `summary` is the batch. The rate and the current file are the part's.
  public func within(files: Int, bytes: UInt64, of summary: OfferSummary) -> ProgressSnapshot {
    ProgressSnapshot(
      bytes: self.bytes + Int64(clamping: bytes), total: max(total, Int64(clamping: summary.bytes)),
      bytesPerSecond: bytesPerSecond, filesDone: filesDone + files,
      fileCount: max(fileCount, summary.entries), currentFile: currentFile,
      currentFileBytes: currentFileBytes, currentFileSize: currentFileSize,
      totalIsKnown: totalIsKnown, currentFileSizeIsKnown: currentFileSizeIsKnown)
  }
}
