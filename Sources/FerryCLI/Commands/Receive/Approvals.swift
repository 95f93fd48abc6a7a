import Ferry
import Synchronization

/// What a sender was accepted with, by fingerprint: the policy, or the summary the person said
/// yes to, and how many of its offers were seen. Offers are checked against the summary one
/// after the other, as long as together they stay within it (a batch of more files than one
/// offer carries arrives as consecutive offers); any other offer needs its own yes.
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
    /// What the offers of the batch received so far added up to (carried over to a sender
    /// that comes back: it resumes with the offer it was sending).
    var done = OfferSummary.Tally()
    /// With the offer being received counted (nil: none is); one at a time.
    var admitted: OfferSummary.Tally?
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
  /// `carrying`: the approval it carries over, whose batch it goes on with.
  func record(
    _ invitation: Invitation, summary: OfferSummary?, byPolicy: Bool, carrying: Approval? = nil
  ) {
    approvals.withLock {
      $0[invitation.fingerprint] = Approval(
        summary: summary, name: invitation.peer.displayName,
        resumes: carrying.map { $0.resumes + 1 } ?? 0, byPolicy: byPolicy,
        status: invitation.status, code: invitation.verificationCode,
        done: carrying?.done ?? OfferSummary.Tally())
    }
  }

  /// Whether `files`, offered by `fingerprint`, are the next part of the batch its summary
  /// announced (``OfferSummary/admits(_:after:)``), with no other part being received: it is
  /// then counted as the part being received.
  func admit(
    _ fingerprint: Fingerprint, _ files: [(path: String, size: UInt64)], folders: Set<String>
  ) -> Bool {
    approvals.withLock { approvals in
      guard let approval = approvals[fingerprint], approval.admitted == nil,
        let tally = approval.summary?.admits(files, folders: folders, after: approval.done)
      else { return false }
      approvals[fingerprint]?.admitted = tally
      return true
    }
  }

  /// When the offer `fingerprint` is sending is a part of its batch: the batch, and what its
  /// parts before this one added up to (for one progress total).
  func part(of fingerprint: Fingerprint) -> (summary: OfferSummary, before: OfferSummary.Tally)? {
    approvals.withLock { approvals in
      guard let approval = approvals[fingerprint], approval.admitted != nil,
        let summary = approval.summary
      else { return nil }
      return (summary, approval.done)
    }
  }

  /// The part of `fingerprint`'s batch being received ended with every file settled.
  ///
  /// - Returns: Whether more of the batch is to come (fewer files received than announced).
  func partFinished(_ fingerprint: Fingerprint) -> Bool {
    approvals.withLock { approvals in
      guard var approval = approvals[fingerprint] else { return false }
      if let admitted = approval.admitted { approval.done = admitted }
      approval.admitted = nil
      approvals[fingerprint] = approval
      let done = approval.done
      guard let summary = approval.summary, done.files + done.folders > 0 else { return false }
      return done.files < summary.files || done.folders < summary.folders ?? 0
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
      // The part being received comes again from its start when the sender is back.
      approvals[fingerprint]?.admitted = nil
      guard case .underWay? = approvals[fingerprint]?.batch else { return }
      approvals[fingerprint]?.batch = .lost(.now)
    }
  }

  /// The batch from `fingerprint` ended: nothing of it is resumed without asking.
  func ended(_ fingerprint: Fingerprint) {
    approvals.withLock { $0[fingerprint]?.batch = .ended }
  }
}
