import Ferry
import FerryAPI
import Synchronization

/// The transfers coming in now, each under an id of the API's (``DaemonID``), so that the API
/// (the page's Cancel) can list and stop them. At most ``limit`` are kept (the receiver's own
/// caps keep far fewer under way). Any thread.
package final class ArrivingTransfers: Sendable {
  /// The most transfers listed.
  package static let limit = 1024

  private let transfers = Mutex<[(id: String, transfer: IncomingTransfer)]>([])

  /// Lists nothing yet.
  package init() {}

  /// `transfer` began.
  package func started(_ transfer: IncomingTransfer) {
    transfers.withLock { transfers in
      guard transfers.count < Self.limit, !transfers.contains(where: { $0.transfer === transfer })
      else { return }
      transfers.append((DaemonID.new(), transfer))
    }
  }

  /// `transfer` ended (done, failed or cancelled).
  package func ended(_ transfer: IncomingTransfer) {
    transfers.withLock { $0.removeAll { $0.transfer === transfer } }
  }

  /// The transfers under way, the oldest first, as the API says them.
  package var list: [Components.Schemas.Transfer] {
    transfers.withLock { $0 }.map(Self.api)
  }

  /// Cancels transfer `id` on both ends; nil when no transfer under way has that id.
  package func cancel(_ id: String) -> Components.Schemas.Transfer? {
    guard let found = transfers.withLock({ $0.first { $0.id == id } }) else { return nil }
    found.transfer.cancel()
    return Self.api(found)
  }

  private static func api(_ entry: (id: String, transfer: IncomingTransfer))
    -> Components.Schemas.Transfer
  {
    let transfer = entry.transfer
    return .init(
      id: entry.id, peer: transfer.peer.displayName,
      fingerprint: transfer.peer.fingerprint.hexString, files: transfer.files.count,
      bytes: Int(max(0, transfer.progress.overall.completedUnitCount)),
      total: Int(min(transfer.totalBytes, UInt64(Int.max))))
  }
}
