import Ferry
import Synchronization

/// What a sender was accepted with, by fingerprint: the policy, or the summary the person said
/// yes to, and how many of its offers were seen. The first offer on an accepted connection is
/// checked against the summary; every later one needs its own yes.
///
/// An approval also remembers whether its batch ended (received, declined, cancelled) or its
/// link was lost first: a sender that lost its link comes back with the same invitation, and
/// within the resume grace (`--resume-grace`) is accepted without asking again.
final class Approvals: Sendable {
  /// One sender's approval.
  struct Approval: Sendable {
    /// What the invitation announced (nil: it did not say).
    let summary: OfferSummary?
    /// Whether a policy (`--yes`, `--accept-from`) accepted it, rather than a person.
    let byPolicy: Bool
    /// What this machine knew of the sender when it was accepted.
    let status: KnownPeers.Status
    /// The code both ends showed.
    let code: VerificationCode
    /// Offers from it seen since.
    var offers = 0
    /// Where its batch stands.
    var batch = Batch.underWay
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

  private let approvals = Mutex<[Fingerprint: Approval]>([:])

  /// Records that `invitation` was accepted, announcing `summary`.
  func record(_ invitation: Invitation, summary: OfferSummary?, byPolicy: Bool) {
    approvals.withLock {
      $0[invitation.fingerprint] = Approval(
        summary: summary, byPolicy: byPolicy,
        status: invitation.status, code: invitation.verificationCode)
    }
  }

  /// The approval of `fingerprint` as it stood when this offer came (its `offers` counts the
  /// ones before), counting the offer; nil if it was never accepted.
  func next(_ fingerprint: Fingerprint) -> Approval? {
    approvals.withLock { approvals in
      guard let approval = approvals[fingerprint] else { return nil }
      approvals[fingerprint]?.offers += 1
      return approval
    }
  }

  /// The approval `invitation` comes back for: the same sender announcing the same batch
  /// (`summary`), unfinished, whose link was lost at most `grace` ago (or is still thought up:
  /// the sender knows better). Nil when it must be asked about.
  func resumable(_ invitation: Invitation, summary: OfferSummary?, within grace: Duration)
    -> Approval?
  {
    guard grace > .zero, let summary else { return nil }
    return approvals.withLock { approvals in
      guard let approval = approvals[invitation.fingerprint], approval.summary == summary
      else { return nil }
      switch approval.batch {
      case .underWay: return approval
      case .lost(let when): return ContinuousClock.now - when <= grace ? approval : nil
      case .ended: return nil
      }
    }
  }

  /// The link to `fingerprint` was lost (a drop, a stall, a close): an unfinished batch may
  /// come back within the grace.
  func linkLost(_ fingerprint: Fingerprint) {
    approvals.withLock { approvals in
      guard case .underWay? = approvals[fingerprint]?.batch else { return }
      approvals[fingerprint]?.batch = .lost(.now)
    }
  }

  /// The batch from `fingerprint` ended: nothing of it is resumed without asking.
  func ended(_ fingerprint: Fingerprint) {
    approvals.withLock { $0[fingerprint]?.batch = .ended }
  }
}
