import Ferry
import Foundation
import Synchronization

/// Turns a session's resource events into what `ferry receive` shows: a progress bar per
/// sender, `progress` / `file-done` / `done` events, where each file was saved, and each offer's
/// outcome (0 or 1) for `--once`.
struct ReceiveReporter: Sendable {
  let output: EventWriter
  let bar: ProgressBar
  let incoming: IncomingTransfers
  let outcomes: AsyncStream<Int32>.Continuation

  func report(_ event: ResourceEvent) {
    switch event {
    case .offerReceived(let transfer):
      incoming.add(transfer)
      output.event(
        "offer",
        [
          ("peer", .string(transfer.peer.displayName)), ("files", .int(transfer.files.count)),
          ("bytes", .int(Int(transfer.totalBytes))),
        ])
      Task { await follow(transfer) }
    case .started:
      break
    case .finished(let name, let peer, .success(let url), let digest):
      output.event(
        "file-done",
        [
          ("peer", .string(peer.displayName)), ("path", .string(name)),
          ("saved", url.map { .string($0.path) } ?? .null),
          ("sha256", digest.map { .string(Hex.lowercase($0)) } ?? .null),
        ])
      bar.above {
        output.say(
          url.map { "Saved \(printable($0.path))" } ?? "Skipped \(printable(name)) (name taken)")
      }
    case .finished(let name, let peer, .failure(let error), _):
      output.event(
        "error",
        [
          ("peer", .string(peer.displayName)), ("path", .string(name)),
          ("code", .string(Self.code(error))), ("message", .string(error.description)),
        ])
      bar.above {
        // Errors about the offer as a whole refuse it before any file is written.
        switch error {
        case .resource(.unsafePath), .resource(.insufficientSpace), .resource(.tooManyFiles):
          output.note("Refused the offer from \(printable(peer.displayName)): \(error)")
        default:
          output.note("\(printable(name)): \(error)")
        }
      }
    case .offerFinished(let transfer, let error):
      incoming.remove(transfer)
      bar.remove(transfer.peer.displayName)
      output.event(
        "done",
        [
          ("peer", .string(transfer.peer.displayName)), ("files", .int(transfer.files.count)),
          ("bytes", .int(Int(transfer.totalBytes))),
          ("error", error.map { .string($0.description) } ?? .null),
        ])
      if let error {
        bar.above { output.note("Transfer from \(transfer.peer.displayName) ended: \(error)") }
      } else {
        bar.above {
          output.note(
            "Received \(transfer.files.count) file(s), \(formatBytes(transfer.totalBytes)) from "
              + "\(transfer.peer.displayName).")
        }
      }
      outcomes.yield(error == nil ? 0 : 1)
    }
  }

  /// Progress bar and `progress` events for one offer.
  private func follow(_ transfer: IncomingTransfer) async {
    let label = transfer.peer.displayName
    for await snapshot in transfer.progress.snapshots {
      output.progress(snapshot, peer: label, bar: bar)
    }
  }

  /// The stable JSON code of a failed file.
  private static func code(_ error: TransferError) -> String {
    switch error {
    case .cancelled, .cancelledByPeer: return "cancelled"
    case .peerDisconnected: return "peer-disconnected"
    case .resource(.integrityCheckFailed): return "integrity"
    default: return "transfer-failed"
    }
  }
}

/// Offers being received, so that an interrupt cancels them on both ends.
final class IncomingTransfers: Sendable {
  private let transfers = Mutex<[ObjectIdentifier: IncomingTransfer]>([:])

  func add(_ transfer: IncomingTransfer) {
    transfers.withLock { $0[ObjectIdentifier(transfer)] = transfer }
  }

  func remove(_ transfer: IncomingTransfer) {
    _ = transfers.withLock { $0.removeValue(forKey: ObjectIdentifier(transfer)) }
  }

  /// Cancels every offer under way; returns how many there were.
  func cancelAll() -> Int {
    let all = transfers.withLock { Array($0.values) }
    for transfer in all { transfer.cancel() }
    return all.count
  }
}
