import Ferry
import Foundation
import Synchronization

/// The transfers under way, so that an interrupt cancels each on both ends before the session
/// closes.
package final class ActiveTransfers: Sendable {
  private let session: Session
  private let state = Mutex<
    (transfers: [ObjectIdentifier: ResourceTransfer], closed: Bool, cancelled: Int)
  >(([:], false, 0))

  package init(session: Session) {
    self.session = session
  }

  /// Registers `transfer`; false once interrupted (the caller cancels it).
  package func add(_ transfer: ResourceTransfer) -> Bool {
    state.withLock { state in
      guard !state.closed else { return false }
      state.transfers[ObjectIdentifier(transfer)] = transfer
      return true
    }
  }

  package func remove(_ transfer: ResourceTransfer) {
    _ = state.withLock { $0.transfers.removeValue(forKey: ObjectIdentifier(transfer)) }
  }

  /// Whether the transfers were interrupted (``interrupt()``).
  package var isInterrupted: Bool { state.withLock { $0.closed } }

  /// What Ctrl-C says: that a re-run resumes, when it cut a transfer short.
  package var interruptMessage: String {
    state.withLock { $0.cancelled } > 0
      ? "interrupted; the receiver keeps what arrived: run the same send again to resume"
      : "interrupted"
  }

  /// Cancels every transfer and closes the session, waiting (at most 5 s) until each
  /// connection has closed: the RESETs leave before the GOODBYE, and the socket is not closed
  /// before the receiver has read them (closing it with the receiver's credit unread would
  /// reset the connection and lose them), so that each receiver reports a cancel rather than a
  /// vanished sender.
  package func interrupt() async {
    let transfers = state.withLock { state in
      state.closed = true
      state.cancelled = state.transfers.count
      return Array(state.transfers.values)
    }
    for transfer in transfers { transfer.cancel() }
    await session.closeAndWait(timeout: .seconds(5))
  }
}
