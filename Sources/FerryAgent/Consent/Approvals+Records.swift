import Ferry
import Synchronization

/// What an approval records: the approval itself, the part of its batch being received, where
/// its parts and batch stand, and what admitting an offer decided.
extension Approvals {
  /// One sender's approval.
  struct Approval: Sendable {
    /// What the invitation announced (nil: it did not say).
    let summary: OfferSummary?
    /// The name it was accepted under.
    let name: String
    /// How many times this approval was carried over to a sender that came back.
    let resumes: Int
    /// Whether a policy (`--yes`, `--accept-from`) accepted it, rather than a person.
    let byPolicy: Bool
    /// What this machine knew of the sender when it was accepted.
    let status: KnownPeers.Status
    /// The code both ends showed.
    let code: VerificationCode
    /// Offers from it seen since.
    var offers = 0
    /// What is spent of the budget: the parts received whole, and what the parts that failed
    /// settled before they did (carried over to a sender that comes back).
    var done = OfferSummary.Tally()
    /// Paths settled by parts that failed: offered again, they are never written again.
    var settled = Set<String>()
    /// How many of its parts failed (a stall, a drop, a cut) without coming back.
    var failures = 0
    /// The part being received, or the last one.
    var part = PartState.none
    /// Where its batch stands.
    var batch = Batch.underWay
  }

  /// One offer admitted as a part of an approved batch.
  struct Part: Sendable {
    /// The offer it is: only the end of the transfer that carries it ends it (another offer's
    /// end — one approved apart, or an old link's late report — leaves it alone).
    let offer: OfferID
    /// Whether its transfer began (``started(_:)``): until then, its link's loss ends it.
    var started = false
    /// The budget spent once this part is received whole.
    let tally: OfferSummary.Tally
    /// Its entries (files and empty folders) not settled before, and their sizes.
    let sizes: [String: UInt64]
    /// Those of its entries that are empty folders.
    let folders: Set<String>
    /// Those of its entries that are streamed files (of unknown size).
    var streamed: Set<String> = []
    /// Its entries settled so far.
    var settled = Set<String>()

    /// What its settled entries add up to.
    var settledTally: OfferSummary.Tally {
      let files = settled.filter { !folders.contains($0) }
      return OfferSummary.Tally(
        files: files.count, folders: settled.count - files.count,
        streamed: files.count { streamed.contains($0) },
        bytes: files.reduce(0) { $0 + (sizes[$1] ?? 0) },
        hidden: TreeOverview(Array(settled)).hidden)
    }

    /// What settled entry `path` adds to the budget spent.
    func tally(of path: String) -> OfferSummary.Tally {
      let folder = folders.contains(path)
      return OfferSummary.Tally(
        files: folder ? 0 : 1, folders: folder ? 1 : 0,
        streamed: streamed.contains(path) ? 1 : 0, bytes: folder ? 0 : sizes[path] ?? 0,
        hidden: TreeOverview([path]).hidden)
    }
  }

  /// Where an approval's parts stand.
  enum PartState: Sendable {
    /// None was admitted yet.
    case none
    /// One is being received.
    case receiving(Part)
    /// The last one was received whole.
    case finished
    /// The last one failed; what it settled is counted. Its files settled late (their events
    /// come after the failure) are counted as they come.
    case failed(Part)
  }

  /// Where an approved batch stands.
  enum Batch: Sendable {
    /// Accepted, and neither ended nor lost yet.
    case underWay
    /// The link was lost with the batch unfinished, at this instant.
    case lost(ContinuousClock.Instant)
    /// It ended: received, declined or cancelled. Nothing to resume.
    case ended
  }

  /// What ``admit(_:_:folders:streamed:offer:)`` decided about one offer.
  struct Admission: Sendable {
    /// Whether it is the next part of the approved batch (within what is left of it).
    let admitted: Bool
    /// Its paths settled before under the same approval: never written again.
    let receivedBefore: Set<String>
  }
}
