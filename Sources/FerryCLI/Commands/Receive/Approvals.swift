import Ferry
import Synchronization

/// What a sender was accepted with, by fingerprint: the policy, or the summary the person said
/// yes to, and how many of its offers were seen. The first offer on an accepted connection is
/// checked against the summary; every later one needs its own yes.
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
  }

  private let approvals = Mutex<[Fingerprint: Approval]>([:])

  /// Records that `invitation` was accepted, announcing `summary`.
  func record(_ invitation: Invitation, summary: OfferSummary?, byPolicy: Bool) {
    approvals.withLock {
      $0[invitation.fingerprint] = Approval(
        summary: summary, byPolicy: byPolicy, status: invitation.status,
        code: invitation.verificationCode)
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
}
