import Ferry
import Foundation
import Synchronization

/// Offers being received, so that an interrupt cancels them on both ends, and how many files
/// each sender's offers found already there (for the summary line).
final class IncomingTransfers: Sendable {
  private let transfers = Mutex<[ObjectIdentifier: IncomingTransfer]>([:])
  private let identical = Mutex<[Fingerprint: Int]>([:])

  /// A file from `peer` was already there.
  func countIdentical(from peer: PeerID) {
    identical.withLock { $0[peer.fingerprint, default: 0] += 1 }
  }

  /// How many files from `peer` were already there since the last call.
  func takeIdentical(from peer: PeerID) -> Int {
    identical.withLock { $0.removeValue(forKey: peer.fingerprint) ?? 0 }
  }

  func add(_ transfer: IncomingTransfer) {
    transfers.withLock { $0[ObjectIdentifier(transfer)] = transfer }
  }

  /// Forgets `transfer`, which ended: false when it was not there any more (``cancelAll()``
  /// took it, and its end is reported already).
  func remove(_ transfer: IncomingTransfer) -> Bool {
    transfers.withLock { $0.removeValue(forKey: ObjectIdentifier(transfer)) } != nil
  }

  /// Cancels every offer under way and forgets it; returns them, for the caller to report their
  /// end: the session that reports it itself is closed right after (Ctrl-C), too soon for that.
  func cancelAll() -> [IncomingTransfer] {
    let cancelled = transfers.withLock { transfers in
      defer { transfers.removeAll() }
      return Array(transfers.values)
    }
    for transfer in cancelled { transfer.cancel() }
    return cancelled
  }
}
