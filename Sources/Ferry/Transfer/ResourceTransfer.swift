import Foundation

/// A resource (or batch) being sent: its progress, the bytes that crossed the wire, and its
/// outcome.
public final class ResourceTransfer: Sendable {
  /// The files, as offered: each one's path at the receiver and size.
  public let files: [(path: String, size: UInt64)]
  /// Progress (bytes sent); cancelling it cancels the transfer on both ends.
  public let progress: TransferProgress
  private let task: Task<[FileResult], any Error>
  private let offer: any OfferSending

  init(
    files: [TransferFile], progress: TransferProgress, offer: any OfferSending,
    task: Task<[FileResult], any Error>
  ) {
    self.files = files.map { ($0.path, $0.size) }
    self.progress = progress
    self.offer = offer
    self.task = task
  }

  /// File bytes actually sent so far (less than the total when the receiver resumed).
  public var bytesSent: UInt64 { offer.bytesSentSoFar }

  /// What the receiver said it holds of each file, and what was sent of it
  /// (``OfferSending/delivery``).
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

/// What a ``ResourceTransfer`` needs of the offer that sends its files, whatever front end sends
/// it (the Ferry wire's `OutgoingOffer`). Read from any thread.
protocol OfferSending: AnyObject, Sendable {
  /// File bytes sent so far (less than the total when the receiver resumed).
  var bytesSentSoFar: UInt64 { get }
  /// What the receiver said it holds of each file, and what was sent of it.
  var delivery: [SendProgress.File] { get }
  /// Cancels the offer on both ends.
  func cancel()
}
