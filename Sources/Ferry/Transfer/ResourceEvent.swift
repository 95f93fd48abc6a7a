import Foundation

/// What happens to resources a peer sends.
public enum ResourceEvent: Sendable {
  /// An offer was accepted: its files, sizes and progress.
  case offerReceived(IncomingTransfer)
  /// A file started arriving (or resumed).
  case started(name: String, peer: PeerID, progress: Progress)
  /// A file finished: where it is now (placed, or staged when not relocating), nil if skipped
  /// by the conflict policy; or why it failed (nothing of it is left in the destination).
  /// `digest` is the verified digest of the whole file, nil when it was not received.
  case finished(
    name: String, peer: PeerID, result: Result<URL?, TransferError>, digest: FileDigest?)
  /// A file was already in the destination, at `at`, with the same size, modification time and
  /// content (`digest`): nothing of it was sent or written, whatever the conflict policy.
  case identical(name: String, peer: PeerID, at: URL, digest: FileDigest)
  /// The whole offer ended; `error` is nil when every file was stored, skipped or identical, else why the
  /// offer stopped or the first file's failure.
  case offerFinished(IncomingTransfer, error: TransferError?)
  /// Partial files that no transfer resumed for ``ReceiveOptions/staleAfter`` (7 days by
  /// default) were removed from `destination`'s staging folder (`.ferry-partial`): `files` of
  /// them, `bytes` in all. Checked whenever an offer into `destination` is accepted.
  case staleStagingRemoved(files: Int, bytes: UInt64, destination: URL)
  /// An offer was refused before anything of it was written: an unsafe path, not enough free
  /// space, an unsafe destination. `files` is how many it held.
  case offerRefused(peer: PeerID, files: Int, error: TransferError)
}
