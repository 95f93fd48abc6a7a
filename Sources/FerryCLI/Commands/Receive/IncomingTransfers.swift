import Ferry
import Foundation
import Synchronization

/// Offers being received and when each began, and how many files each sender's offers found
/// already there, saved or failed (for the summary line): what `ferry receive` shows.
final class IncomingTransfers: Sendable {
  /// How many "Saved PATH" lines one offer prints; the rest are counted in its summary line
  /// (5000 files are 5000 lines nobody reads; `--json` lists every one).
  static let savedLinesShown = 20

  private let transfers = Mutex<
    [ObjectIdentifier: (transfer: IncomingTransfer, started: ContinuousClock.Instant)]
  >([:])
  /// How many lines about files that failed one offer prints; the rest are counted in its
  /// ending line (a sender that offers 10 000 files and cancels must not print 10 000 lines).
  static let failedLinesShown = 5

  private let identical = Mutex<[Fingerprint: Int]>([:])
  private let saved = Mutex<[Fingerprint: Int]>([:])
  private let failed = Mutex<[Fingerprint: Int]>([:])

  /// A file from `peer` failed: whether its line is shown (the first ``failedLinesShown`` of
  /// an offer).
  func showsFailure(from peer: PeerID) -> Bool {
    failed.withLock { failed in
      failed[peer.fingerprint, default: 0] += 1
      return failed[peer.fingerprint]! <= Self.failedLinesShown
    }
  }

  /// How many failed files from `peer` were not shown since the last call.
  func takeUnshownFailures(from peer: PeerID) -> Int {
    max(
      0,
      (failed.withLock { $0.removeValue(forKey: peer.fingerprint) } ?? 0) - Self.failedLinesShown)
  }

  /// A file from `peer` was saved: whether its line is shown (the first
  /// ``savedLinesShown`` of an offer).
  func showsSaved(from peer: PeerID) -> Bool {
    saved.withLock { saved in
      saved[peer.fingerprint, default: 0] += 1
      return saved[peer.fingerprint]! <= Self.savedLinesShown
    }
  }

  /// How many saved files from `peer` were not shown since the last call.
  func takeUnshown(from peer: PeerID) -> Int {
    max(
      0, (saved.withLock { $0.removeValue(forKey: peer.fingerprint) } ?? 0) - Self.savedLinesShown)
  }

  /// A file from `peer` was already there.
  func countIdentical(from peer: PeerID) {
    identical.withLock { $0[peer.fingerprint, default: 0] += 1 }
  }

  /// How many files from `peer` were already there since the last call.
  func takeIdentical(from peer: PeerID) -> Int {
    identical.withLock { $0.removeValue(forKey: peer.fingerprint) ?? 0 }
  }

  func add(_ transfer: IncomingTransfer) {
    transfers.withLock { $0[ObjectIdentifier(transfer)] = (transfer, .now) }
  }

  /// Forgets `transfer`, which ended, and returns when it began: nil when it was not there any
  /// more (its end is reported already).
  func remove(_ transfer: IncomingTransfer) -> ContinuousClock.Instant? {
    transfers.withLock { $0.removeValue(forKey: ObjectIdentifier(transfer)) }?.started
  }
}
