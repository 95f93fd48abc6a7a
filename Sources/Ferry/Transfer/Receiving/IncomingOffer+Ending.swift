import CFerrySystem
import Dispatch
import Foundation
import NIOCore
import Synchronization

/// The end of an accepted offer, and what the sender may read of this side's words.
extension IncomingOffer {
  /// Ends an accepted offer: flushes, reports it — once its last FILE_ACKs are on their way,
  /// so that an application may exit on that event without cutting them off.
  func finish(_ error: TransferError?) {
    disk.stopAllHashes()
    progress?.finish()
    // Flushes, closes the files still open, removes the staging folder if it is empty.
    let flushFailure = disk.finish()
    // The files' events go out before the offer's end does.
    yieldEvents()
    let (gathered, events) = (acks, self.events)
    acks = []
    let outcome = error ?? flushFailure
    let finished = transfer.map { ResourceEvent.offerFinished($0, error: outcome) }
    frontEnd.close(after: gathered) { if let finished { events.yield(finished) } }
  }

  /// `text` as the peer may read it: this machine's own paths (the destination's location) are
  /// left out, so a sender learns nothing but paths relative to what it offered.
  func forPeer(_ text: String) -> String {
    // Most acknowledgements carry no reason: nothing to search (once per file).
    guard !text.isEmpty, let root = destinationPath, !root.isEmpty else { return text }
    return text.replacing(root + "/", with: "").replacing(root, with: "the destination")
  }
}
