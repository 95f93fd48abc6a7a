import Ferry
import Foundation
import Synchronization

/// The transfers under way, so that an interrupt cancels each on both ends before the session
/// closes.
final class ActiveTransfers: Sendable {
  private let session: Session
  private let state = Mutex<(transfers: [ObjectIdentifier: ResourceTransfer], closed: Bool)>(
    ([:], false))

  init(session: Session) {
    self.session = session
  }

  /// Registers `transfer`; false once interrupted (the caller cancels it).
  func add(_ transfer: ResourceTransfer) -> Bool {
    state.withLock { state in
      guard !state.closed else { return false }
      state.transfers[ObjectIdentifier(transfer)] = transfer
      return true
    }
  }

  func remove(_ transfer: ResourceTransfer) {
    _ = state.withLock { $0.transfers.removeValue(forKey: ObjectIdentifier(transfer)) }
  }

  /// Cancels every transfer (the RESET gets a moment to reach each receiver, so that it
  /// reports a cancel rather than a vanished sender) and closes the session.
  func interrupt() {
    let transfers = state.withLock { state in
      state.closed = true
      return Array(state.transfers.values)
    }
    for transfer in transfers { transfer.cancel() }
    if !transfers.isEmpty { Thread.sleep(forTimeInterval: 0.2) }
    session.close()
    Thread.sleep(forTimeInterval: 0.1)
  }
}
