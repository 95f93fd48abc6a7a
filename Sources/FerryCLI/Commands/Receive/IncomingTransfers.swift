import Ferry
import Foundation
import Synchronization

/// Offers being received, so that an interrupt cancels them on both ends.
final class IncomingTransfers: Sendable {
  private let transfers = Mutex<[ObjectIdentifier: IncomingTransfer]>([:])

  func add(_ transfer: IncomingTransfer) {
    transfers.withLock { $0[ObjectIdentifier(transfer)] = transfer }
  }

  func remove(_ transfer: IncomingTransfer) {
    _ = transfers.withLock { $0.removeValue(forKey: ObjectIdentifier(transfer)) }
  }

  /// Cancels every offer under way.
  func cancelAll() {
    for transfer in transfers.withLock({ Array($0.values) }) { transfer.cancel() }
  }
}
