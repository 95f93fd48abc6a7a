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

/// What happens to resources a peer sends.
public enum ResourceEvent: Sendable {
  /// An offer was accepted: its files, sizes and progress.
  case offerReceived(IncomingTransfer)
  /// A file started arriving (or resumed).
  case started(name: String, peer: PeerID, progress: Progress)
  /// A file finished: where it is now (placed, or staged when not relocating), nil if skipped
  /// by the conflict policy; or why it failed (nothing of it is left in the destination).
  /// `sha256` is the verified digest of the whole file, nil when it was not received.
  case finished(name: String, peer: PeerID, result: Result<URL?, TransferError>, sha256: [UInt8]?)
  /// The whole offer ended; `error` is nil when every file was stored or skipped, else why the
  /// offer stopped or the first file's failure.
  case offerFinished(IncomingTransfer, error: TransferError?)
  /// An offer was refused before anything of it was written: an unsafe path, not enough free
  /// space, an unsafe destination. `files` is how many it held.
  case offerRefused(peer: PeerID, files: Int, error: TransferError)
}

/// An offer being received.
public final class IncomingTransfer: Sendable {
  /// The sender.
  public let peer: PeerID
  /// The files: path relative to the destination, and size.
  public let files: [(path: String, size: UInt64)]
  /// Bytes in the whole offer.
  public var totalBytes: UInt64 { files.reduce(0) { $0 + $1.size } }
  /// Progress of the offer and each file. Cancelling it cancels the transfer on both ends.
  public let progress: TransferProgress
  let cancelAction: @Sendable () -> Void

  init(
    peer: PeerID, files: [(path: String, size: UInt64)], progress: TransferProgress,
    cancel: @escaping @Sendable () -> Void
  ) {
    self.peer = peer
    self.files = files
    self.progress = progress
    self.cancelAction = cancel
  }

  /// Cancels the transfer on both ends; staged bytes are kept for a later resume.
  public func cancel() {
    cancelAction()
  }
}
