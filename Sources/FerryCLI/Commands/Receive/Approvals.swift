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

  /// How many times one person's yes is carried over to a sender that comes back: a sender
  /// that keeps dropping its own link is asked again after that.
  static let maximumResumes = 10

  /// Records that `invitation` was accepted, announcing `summary`; `resumes`: how many times
  /// the approval it carries over was carried over before (0 for a new one).
  func record(_ invitation: Invitation, summary: OfferSummary?, byPolicy: Bool, resumes: Int = 0) {
    approvals.withLock {
      $0[invitation.fingerprint] = Approval(
        summary: summary, name: invitation.peer.displayName, resumes: resumes,
        byPolicy: byPolicy, status: invitation.status, code: invitation.verificationCode)
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

  /// The approval `invitation` comes back for: the same key under the same name, not looking
  /// like another peer, announcing the same batch (`summary`), unfinished, carried over fewer
  /// than ``maximumResumes`` times, whose link was lost at most `grace` ago — or is still up
  /// here (`isConnected`: the sender knows better that it is dead). Nil when it must be asked
  /// about.
  func resumable(
    _ invitation: Invitation, summary: OfferSummary?, within grace: Duration, isConnected: Bool
  ) -> Approval? {
    guard grace > .zero, let summary else { return nil }
    switch invitation.status {
    case .changedKey, .similarName: return nil
    case .known, .new: break
    }
    return approvals.withLock { approvals in
      guard let approval = approvals[invitation.fingerprint], approval.summary == summary,
        approval.name == invitation.peer.displayName, approval.resumes < Self.maximumResumes
      else { return nil }
      switch approval.batch {
      case .underWay: return isConnected ? approval : nil
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
