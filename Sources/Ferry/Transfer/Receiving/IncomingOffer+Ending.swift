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
    hashingStopped.store(true, ordering: .relaxed)
    progress?.finish()
    var flushFailure: TransferError?
    if let staging, ferry_syncfs(staging.fd) != 0 {
      // The small files placed by this offer may not survive a crash: say so rather than
      // report them safely stored.
      flushFailure = .resource(
        .cannotWrite("flushing the received files to disk failed: \(errnoText())"))
    }
    for file in files.values { file.discard() }
    files = [:]
    staging?.removeIfEmpty()
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
