import FerryWire
import Foundation

/// A resource (or batch) being sent: its progress, the bytes that crossed the wire, and its
/// outcome.
public final class ResourceTransfer: Sendable {
  /// The files, as offered: each one's path at the receiver and size.
  public let files: [(path: String, size: UInt64)]
  /// Progress (bytes sent); cancelling it cancels the transfer on both ends.
  public let progress: TransferProgress
  private let task: Task<[FileResult], any Error>
  private let offer: OutgoingOffer

  init(
    files: [OfferedFile], progress: TransferProgress, offer: OutgoingOffer,
    task: Task<[FileResult], any Error>
  ) {
    self.files = files.map { ($0.path, $0.size) }
    self.progress = progress
    self.offer = offer
    self.task = task
  }

  /// File bytes actually sent so far (less than the total when the receiver resumed).
  public var bytesSent: UInt64 { offer.bytesSent.load(ordering: .relaxed) }

  /// What the receiver said it holds of each file, and what was sent of it
  /// (``OutgoingOffer/delivery``).
  var delivery: [SendProgress.File] { offer.delivery }

  /// Waits for the end: every file's verdict.
  ///
  /// - Throws: ``TransferError``: `.cancelledByPeer` when the receiver refused or cancelled,
  ///   `.cancelled`, `.peerDisconnected`, `.resource` when a file could not be read here or was
  ///   not stored there (corrupt, write failure).
  public func result() async throws(TransferError) -> [FileResult] {
    do {
      let results = try await task.value
      if let bad = results.first(where: { $0.status == .corrupt || $0.status == .failed }) {
        throw TransferError.resource(
          bad.status == .corrupt
            ? .integrityCheckFailed(path: bad.path)
            : .cannotWrite("\(bad.path) at the receiver: \(DisplayText.escaping(bad.reason))"))
      }
      return results
    } catch let error as TransferError {
      throw error
    } catch {
      throw .cancelled
    }
  }

  /// Cancels on both ends; the receiver keeps what it staged, for a resume.
  public func cancel() {
    offer.cancel()
  }
}
