import Ferry
import Synchronization

/// The offers a receiver is receiving, so that stopping it cancels them on both ends. Any
/// thread.
final class TransfersUnderWay: Sendable {
  private let transfers = Mutex<[ObjectIdentifier: IncomingTransfer]>([:])

  /// `transfer` began.
  func add(_ transfer: IncomingTransfer) {
    transfers.withLock { $0[ObjectIdentifier(transfer)] = transfer }
  }

  /// Forgets `transfer`, which ended: false when it was not there any more (``cancelAll()``
  /// took it, and its end is reported already).
  func remove(_ transfer: IncomingTransfer) -> Bool {
    transfers.withLock { $0.removeValue(forKey: ObjectIdentifier(transfer)) } != nil
  }

  /// Cancels every offer under way and forgets it; returns them, for the caller to report
  /// their end (the session that would report it is closed right after, too soon for that).
  func cancelAll() -> [IncomingTransfer] {
    let cancelled = transfers.withLock { transfers in
      defer { transfers.removeAll() }
      return Array(transfers.values)
    }
    for transfer in cancelled { transfer.cancel() }
    return cancelled
  }
}
