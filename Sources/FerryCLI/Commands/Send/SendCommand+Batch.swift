import ArgumentParser
import Ferry
import FerryAgent
import Foundation
import Synchronization

/// What `ferry send` offers: its paths, `--files-from` and standard input, as one batch.
extension SendCommand {
  /// What to offer: the paths and `--files-from`, and standard input (`-`): a file as itself,
  /// a pipe streamed (``StandardInputSource``), a terminal or a pipe for several receivers read
  /// into its spool; nil for `--text`.
  func batch(_ events: EventWriter) throws(CLIFailure) -> (SendBatch?, StandardInputSpool?) {
    guard text == nil else { return (nil, nil) }
    let arguments = paths.filter { $0 != "-" }
    var entries: [ResourceItem] = []
    if !arguments.isEmpty || filesFrom != nil {
      entries = try SendPaths(
        arguments: arguments, filesFrom: filesFrom, nullSeparated: nullSeparated
      ).entries()
    }
    let note = { (skipped: ResourceItem.Skipped) in
      events.note("Leaving out \(printable(skipped.path)): \(skipped.reason)")
      events.emit(
        LeftOut(path: skipped.path, reason: skipped.reason, unreadable: skipped.unreadable))
    }
    guard paths.contains("-") else { return (try Self.batch(entries, skipped: note), nil) }
    let name = stdinName ?? "stdin"
    try StandardInputSpool.check(name: name)
    let kind = StandardInputSource.kind
    if kind == .file || (kind == .stream && to.count <= 1) {
      // A file as itself; a pipe sent as it is read, once the receiver said yes.
      let item =
        kind == .file
        ? ResourceItem(url: StandardInputSource.url, path: name)
        : ResourceItem(streamingFrom: StandardInputSource.url, path: name)
      let all = try SendPaths.checked(entries + [item])
      return (try Self.batch(all, skipped: note), nil)
    }
    // A terminal is read to Ctrl-D first; a pipe for several receivers too (each gets it all).
    if kind == .stream {
      events.note("Reading standard input to its end first: it goes to \(to.count) receivers.")
    }
    // Ctrl-C while standard input is read leaves no temporary file behind.
    let spool = try StandardInputSpool(name: name)
    Interrupts.onInterrupt { spool.remove() }
    try spool.read { events.note($0) }
    do {
      let all = try SendPaths.checked(entries + [spool.item])
      return (try Self.batch(all, skipped: note), spool)
    } catch {
      spool.remove()
      throw error
    }
  }

  /// The batch of `entries` (``SendBatch``), as the command's failure when there is nothing
  /// to send or an entry cannot be read.
  private static func batch(
    _ entries: [ResourceItem], skipped: (ResourceItem.Skipped) -> Void
  ) throws(CLIFailure) -> SendBatch {
    do {
      return try SendBatch(entries: entries, skipped: skipped)
    } catch {
      throw CLIFailure(error)
    }
  }
}
