internal import FerryWire
import Foundation
import Synchronization

extension Session {
  /// Accepts every valid offer of files from peers into `options.destination` (or, with nil,
  /// refuses every offer, the default). Offers with unsafe paths, or that do not fit the free
  /// space, are refused all the same (``ResourceEvent/offerRefused(peer:files:error:)``).
  public func receiveResources(_ options: ReceiveOptions?) {
    transfers.reception.withLock { $0 = options.map { .automatic($0) } ?? .refused }
  }

  /// Asks the application about every valid offer instead of accepting it: each one is
  /// yielded on ``resourceOffers`` with its real files and sizes, and nothing is written until
  /// ``ResourceOffer/accept(_:)``. This is how consent binds to what is actually sent.
  public func askAboutResourceOffers() {
    transfers.reception.withLock { $0 = .asking }
  }

  /// Offers waiting for a decision, after ``askAboutResourceOffers()``. Finishes after
  /// ``close()``. Several readers may wait at once (`AsyncStream`'s rule): each offer goes to
  /// one of them.
  public var resourceOffers: AsyncStream<ResourceOffer> {
    transfers.offers
  }

  /// Files arriving from peers: offers, each file's start and end, each offer's end. Several
  /// readers may wait at once (`AsyncStream`'s rule): each event goes to one of them, so one
  /// reader that wants them all must be the only one.
  public var resourceEvents: AsyncStream<ResourceEvent> {
    transfers.resourceEvents
  }

  /// Sends one file to `peer` under `name` (a path relative to the receiver's destination),
  /// checked end to end with `checksum`.
  ///
  /// - Throws: ``TransferError/notConnected(_:)``, or ``TransferError/resource(_:)`` when the
  ///   file cannot be read.
  public func sendResource(
    at url: URL, named name: String, to peer: PeerID, checksum: ChecksumAlgorithm = .xxh3
  ) throws(TransferError) -> ResourceTransfer {
    try sendResources([ResourceItem(url: url, path: name)], to: peer, checksum: checksum)
  }

  /// Sends files to `peer` as one offer (see ``ResourceItem/expanding(_:)`` for folders).
  /// Files are pipelined: no round trip per file. Each is checked end to end with `checksum`
  /// (SHA-256 whatever is asked with a peer older than protocol version 3). A streamed item
  /// (``ResourceItem/init(streamingFrom:path:)``) is read as it comes, on a thread of its own.
  ///
  /// - Throws: ``TransferError/notConnected(_:)``; ``TransferError/resource(_:)`` when the
  ///   items fail ``ResourceItem/checked(_:)`` (a file cannot be read, a path is unsafe or
  ///   named twice, more than 100 000 files), or hold a streamed item and the peer speaks a
  ///   version before 5 (``ResourceError/unsupportedByPeer(_:)``), before anything is sent.
  public func sendResources(
    _ requested: [ResourceItem], to peer: PeerID, checksum: ChecksumAlgorithm = .xxh3
  ) throws(TransferError) -> ResourceTransfer {
    guard !requested.isEmpty else { throw .resource(.tooManyFiles(0)) }
    let items: [ResourceItem]
    do {
      items = try ResourceItem.checked(requested)
    } catch {
      throw .resource(error)
    }
    return try offer(items, to: peer, checksum: checksum)
  }

  /// Offers `items` as they are, without ``ResourceItem/checked(_:)``: what a careless or
  /// hostile sender would do (tests use it to check the receiver's own defences).
  func offer(
    _ items: [ResourceItem], to peer: PeerID, checksum: ChecksumAlgorithm = .xxh3
  ) throws(TransferError) -> ResourceTransfer {
    let (link, version) = try linkAndVersion(to: peer)
    let (files, urls) = try OfferedFiles.make(items, version: version)
    let progress = TransferProgress(
      files: files.map { ($0.path, $0.size) }, streamed: files.map(\.isStreamed))
    let offer = OutgoingOffer(
      files: files, urls: urls, link: link, progress: progress, checksum: checksum,
      stall: timeouts.transferStall)
    // Weak: the offer holds its progress, and a strong capture kept every finished offer
    // (and its file list) alive for as long as the process ran.
    progress.overall.cancellationHandler = { [weak offer] in offer?.cancel() }
    let task = Task { try await offer.run() }
    return ResourceTransfer(files: files, progress: progress, offer: offer, task: task)
  }
}
