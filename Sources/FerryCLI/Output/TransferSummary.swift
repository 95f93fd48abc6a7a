import Ferry

/// The end-of-transfer lines people read: what moved, how long it took and how fast ("Sent 8
/// files, 1.2 GB to desk in 4.1 s (290 MB/s)."), as rsync and croc end theirs. Any thread.
enum TransferSummary {
  /// `duration` as people read a stopwatch: `0.4 s`, `12 s`, `4:05`, `1:02:09`.
  static func duration(_ duration: Duration) -> String {
    let seconds = max(0, duration.inSeconds)
    if seconds < 9.95 { return String(format: "%.1f s", seconds) }
    let whole = Int(seconds.rounded())
    if whole < 60 { return "\(whole) s" }
    let clock = String(format: "%02d:%02d", whole / 60 % 60, whole % 60)
    return whole < 3600
      ? "\(whole / 60):" + String(format: "%02d", whole % 60) : "\(whole / 3600):\(clock)"
  }

  /// ` in 4.1 s (290 MB/s)`: how long `bytes` took to cross, and their rate (left out when
  /// nothing crossed, or too fast to tell).
  static func timing(_ bytes: UInt64, took: Duration) -> String {
    let seconds = took.inSeconds
    let perSecond = Double(bytes) / seconds
    // A rate beyond any link (claimed sizes, a clock that barely moved) is not shown: it would
    // be a lie, and past UInt64 a trap.
    let rate =
      bytes > 0 && seconds >= 0.001 && perSecond.isFinite && perSecond < 1e15
      ? " (\(Quantity.bytes(UInt64(perSecond)))/s)" : ""
    return " in \(duration(took))\(rate)"
  }

  /// `entries` of which `folders` are empty folders, as the prompt counted them: `8 files`,
  /// `6 files and 2 empty folders`, `1 empty folder`.
  static func items(_ entries: Int, folders: Int) -> String {
    guard folders > 0 else { return Quantity.count(entries, "file") }
    let files = entries - folders
    let emptyFolders = Quantity.count(folders, "empty folder")
    return files > 0 ? "\(Quantity.count(files, "file")) and \(emptyFolders)" : emptyFolders
  }

  /// The sender's line for one receiver: `files` settled of which `stored` were written and
  /// `identical` were there already, `total` bytes in the batch of which `sent` crossed the
  /// wire (less on a resume), in `took`; `leftOut` the receiver did not ask for (a LocalSend
  /// receiver that has them, or took a subset: it does not say which).
  static func sent(
    files: Int, folders: Int = 0, stored: Int, identical: Int, leftOut: Int = 0, total: UInt64,
    sent: UInt64, to name: String, took: Duration
  ) -> String {
    if stored == 0, identical == files, files > 0 {
      return "Nothing to send: \(identical) already there on \(name) (identical, not sent)."
    }
    let which =
      leftOut == 1
      ? (files == 1
        ? "the file (it has it already, or left it out)"
        : "1 file (it has it already, or left it out)")
      : "\(leftOut == files ? "any of " : "")\(Quantity.count(leftOut, "file")) "
        + "(it has them already, or left them out)"
    let notAsked = "\(name) did not ask for \(which)"
    if stored == 0, leftOut == files, files > 0 { return "Nothing sent: \(notAsked)." }
    let head =
      stored == files
      ? "Sent \(items(files, folders: folders))"
      : "Sent \(stored) of \(items(files, folders: folders))"
    // With files already there, what moved is what crossed; on a resume, the batch's size is
    // said first and what crossed this time after.
    let shown = identical > 0 || leftOut > 0 ? sent : total
    let resumed =
      sent < total && identical == 0 && leftOut == 0
      ? "; resumed, \(Quantity.bytes(sent)) of it sent now" : ""
    let already = identical > 0 ? "; \(identical) already there (identical, not sent)" : ""
    let asked = leftOut > 0 ? "; \(notAsked)" : ""
    return "\(head), \(Quantity.bytes(shown)) to \(name)\(timing(sent, took: took))"
      + "\(resumed)\(already)\(asked)."
  }
}
