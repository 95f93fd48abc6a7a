import Foundation

/// An offer being received.
public final class IncomingTransfer: Sendable {
  /// The offer it receives: the ``ResourceOffer/id`` the application decided on, when it was
  /// asked.
  public let id: OfferID
  /// The sender.
  public let peer: PeerID
  /// The files: path relative to the destination, and size.
  public let files: [(path: String, size: UInt64)]
  /// How many of ``files`` are empty folders (size 0), for a summary that counts them apart.
  public let folders: Int
  /// The paths in ``files`` that are streamed (size 0 there): their size is what arrives.
  public let streamed: Set<String>
  /// Whether the sender's protocol resumes: a re-send of the same files goes on from what
  /// arrived (false: LocalSend, which sends every file whole).
  public let resumable: Bool
  /// Bytes in the whole offer (streamed files not counted: their size is not known).
  public var totalBytes: UInt64 { files.reduce(0) { $0 + $1.size } }
  /// Progress of the offer and each file. Cancelling it cancels the transfer on both ends.
  public let progress: TransferProgress
  let cancelAction: @Sendable () -> Void

  init(
    id: OfferID = .next(), peer: PeerID, files: [(path: String, size: UInt64)], folders: Int = 0,
    streamed: Set<String> = [], resumable: Bool = true, progress: TransferProgress,
    cancel: @escaping @Sendable () -> Void
  ) {
    self.streamed = streamed
    self.resumable = resumable
    self.id = id
    self.peer = peer
    self.files = files
    self.folders = folders
    self.progress = progress
    self.cancelAction = cancel
  }

  /// Cancels the transfer on both ends; staged bytes are kept for a later resume.
  public func cancel() {
    cancelAction()
  }
}
