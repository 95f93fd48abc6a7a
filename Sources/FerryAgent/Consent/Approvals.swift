import Ferry
import Synchronization

/// What a sender was accepted with, by fingerprint: the policy, or the summary the person said
/// yes to, and how many of its offers were seen. Offers are checked against the summary one
/// after the other, as long as together they stay within it (a batch of more files than one
/// offer carries arrives as consecutive offers); any other offer needs its own yes.
///
/// Consent is a budget, spent once: every file settled under an approval (stored, created,
/// found identical, skipped) counts against it whatever later happens to its part. A part that
/// fails — its link dropped, it stalled, it was cut — counts the files it settled; offered
/// again (on the same link or a new one), only its files not settled yet are admitted against
/// what is left, and the ones settled before are never written again
/// (``ReceiveOptions/receivedBefore``).
///
/// An approval also remembers whether its batch ended (received, declined, cancelled) or its
/// link was lost first: a sender that lost its link comes back with the same invitation, and
/// within the resume grace (`--resume-grace`) is accepted without asking again.
final class Approvals: Sendable {
  private let approvals = Mutex<[Fingerprint: Approval]>([:])

  /// How many times one person's yes is carried over to a sender that comes back, and how many
  /// of its parts may fail and be offered again: a sender that keeps dropping its own link or
  /// stalling is asked again after that.
  static let maximumResumes = 10

  /// Records that `invitation` was accepted, announcing `summary`; `resumes`: how many times
  /// the approval it carries over was carried over before (0 for a new one).
  /// `carrying`: the approval it carries over, whose batch (and spent budget) it goes on with.
  func record(
    _ invitation: Invitation, summary: OfferSummary?, byPolicy: Bool, carrying: Approval? = nil
  ) {
    record(
      invitation.peer, status: invitation.status, code: invitation.verificationCode,
      summary: summary, byPolicy: byPolicy, carrying: carrying)
  }

  /// Records that `peer`, known as `status`, was accepted with `code` on both screens (what
  /// ``record(_:summary:byPolicy:carrying:)`` takes from its invitation).
  func record(
    _ peer: PeerID, status: KnownPeers.Status, code: VerificationCode, summary: OfferSummary?,
    byPolicy: Bool, carrying: Approval? = nil
  ) {
    approvals.withLock {
      $0[peer.fingerprint] = Self.approval(
        peer, status: status, code: code, summary: summary, byPolicy: byPolicy,
        carrying: carrying)
    }
  }

  /// A new approval of `peer`, carrying over `carrying`'s batch and spent budget when given.
  private static func approval(
    _ peer: PeerID, status: KnownPeers.Status, code: VerificationCode, summary: OfferSummary?,
    byPolicy: Bool, carrying: Approval?
  ) -> Approval {
    var approval = Approval(
      summary: summary, name: peer.displayName,
      resumes: carrying.map { $0.resumes + 1 } ?? 0, byPolicy: byPolicy,
      status: status, code: code)
    if var carrying {
      closePart(of: &carrying, failed: true)
      approval.done = carrying.done
      approval.settled = carrying.settled
      approval.failures = carrying.failures
    }
    return approval
  }

  /// Whether `files`, offered by `fingerprint`, are the next part of the batch its summary
  /// announced (``OfferSummary/admits(_:folders:streamed:after:)``), with no other part being received,
  /// fewer than ``maximumResumes`` parts failed and the batch not ended (a part that failed on
  /// a link still up is offered again on it): it is then counted as
  /// the part being received. Entries settled before under the same approval are left out of
  /// the count and returned, to be answered without being written.
  func admit(
    _ fingerprint: Fingerprint, _ files: [(path: String, size: UInt64)], folders: Set<String>,
    streamed: Set<String> = [], offer: OfferID
  ) -> Admission {
    approvals.withLock { approvals in
      guard var approval = approvals[fingerprint] else {
        return Admission(admitted: false, receivedBefore: [])
      }
      let again = Set(files.lazy.map(\.path).filter { approval.settled.contains($0) })
      let refused = Admission(admitted: false, receivedBefore: again)
      if case .receiving = approval.part { return refused }
      if case .ended = approval.batch { return refused }
      guard approval.failures < Self.maximumResumes, let summary = approval.summary else {
        return refused
      }
      let fresh = again.isEmpty ? files : files.filter { !again.contains($0.path) }
      let tally: OfferSummary.Tally?
      if fresh.isEmpty {
        // Only files it settled before: nothing is written, nothing more is spent — but it
        // counts as a failed part, so that such offers cannot go on for ever.
        tally = again.isEmpty ? nil : approval.done
        approval.failures += 1
      } else {
        tally = summary.admits(
          fresh, folders: folders, streamed: streamed, after: approval.done)
      }
      guard let tally else { return refused }
      var sizes: [String: UInt64] = [:]
      for file in fresh { sizes[file.path] = file.size }
      approval.part = .receiving(
        Part(
          offer: offer, tally: tally, sizes: sizes,
          folders: folders.filter { sizes[$0] != nil },
          streamed: streamed.filter { sizes[$0] != nil }))
      approvals[fingerprint] = approval
      return Admission(admitted: true, receivedBefore: again)
    }
  }

  /// File (or empty folder) `path` of `fingerprint`'s part was settled: stored, created, found
  /// identical or skipped. It counts against the approval whatever happens to its part.
  func settled(_ fingerprint: Fingerprint, path: String) {
    approvals.withLock { approvals in
      // Taken out and changed in place: a part's sets grow by one per file, and a copy of
      // them per file (the dictionary and the enum still holding the old) made a batch of n
      // files cost n² (a tenth of a second per thousand files).
      guard var approval = approvals.removeValue(forKey: fingerprint) else { return }
      defer { approvals[fingerprint] = approval }
      switch approval.part {
      case .receiving(var part):
        approval.part = .none
        if part.sizes[path] != nil { part.settled.insert(path) }
        approval.part = .receiving(part)
      case .failed(var part):
        approval.part = .none
        // Its event came after the part failed: counted now.
        if part.sizes[path] != nil, part.settled.insert(path).inserted {
          approval.done = approval.done + part.tally(of: path)
          approval.settled.insert(path)
        }
        approval.part = .failed(part)
      case .none, .finished:
        return
      }
    }
  }

  /// Whether `invitation` may be a comeback for a part of its sender's batch that is still
  /// being received here (its end not reported yet): the same key under the same name, not
  /// looking like another peer, announcing the same batch (`summary`) — what
  /// ``resume(_:summary:within:isConnected:)`` would take back once that part ended.
  func awaitsPartEnd(of invitation: Invitation, summary: OfferSummary?) -> Bool {
    guard let summary else { return false }
    return approvals.withLock { approvals in
      guard let approval = approvals[invitation.fingerprint], case .receiving = approval.part
      else { return false }
      return Self.announcesAgain(approval, invitation, summary)
    }
  }

  /// Whether `invitation` announces `approval`'s batch again (`summary`), from its key (the
  /// approval's own) under the same name, not looking like another peer.
  private static func announcesAgain(
    _ approval: Approval, _ invitation: Invitation, _ summary: OfferSummary
  ) -> Bool {
    switch invitation.status {
    case .changedKey, .similarName: return false
    case .known, .new: break
    }
    return approval.summary == summary && approval.name == invitation.peer.displayName
  }

  /// Whether a part of `fingerprint`'s batch is being received (its end not reported yet).
  func isReceivingPart(_ fingerprint: Fingerprint) -> Bool {
    approvals.withLock { approvals in
      guard case .receiving? = approvals[fingerprint]?.part else { return false }
      return true
    }
  }

  /// When the offer `fingerprint` is sending is a part of its batch: the batch, and what its
  /// parts before this one added up to (for one progress total).
  func part(of fingerprint: Fingerprint) -> BatchPosition? {
    approvals.withLock { approvals in
      guard let approval = approvals[fingerprint], case .receiving = approval.part,
        let summary = approval.summary
      else { return nil }
      return BatchPosition(summary: summary, before: approval.done)
    }
  }

  /// How a transfer's end stands to its sender's batch (``partEnded(_:failed:)``).
  struct PartEnd: Sendable {
    /// Whether the transfer carried the part being received (and ended it).
    let wasThePart: Bool
    /// Whether more of the batch is to come: the transfer did not fail, and fewer files were
    /// received than announced.
    let more: Bool
  }

  /// `transfer` began: if it carries the part being received, that part's link is now the
  /// transfer's to end.
  func started(_ transfer: IncomingTransfer) {
    approvals.withLock { approvals in
      let fingerprint = transfer.peer.fingerprint
      guard var approval = approvals[fingerprint], case .receiving(var part) = approval.part,
        part.offer == transfer.id
      else { return }
      part.started = true
      approval.part = .receiving(part)
      approvals[fingerprint] = approval
    }
  }

  /// The offer admitted as `fingerprint`'s part, `offer`, was withdrawn before it was accepted:
  /// that part failed, having settled nothing.
  func abandoned(_ fingerprint: Fingerprint, offer: OfferID) {
    approvals.withLock { approvals in
      guard var approval = approvals[fingerprint], case .receiving(let part) = approval.part,
        part.offer == offer
      else { return }
      Self.closePart(of: &approval, failed: true)
      approvals[fingerprint] = approval
    }
  }

  /// `transfer` ended: with every file settled (`failed` false), or not (what it settled is
  /// counted all the same). It ends its sender's part only when it is the transfer of that
  /// part's offer.
  func partEnded(_ transfer: IncomingTransfer, failed: Bool) -> PartEnd {
    approvals.withLock { approvals in
      let fingerprint = transfer.peer.fingerprint
      guard var approval = approvals[fingerprint] else {
        return PartEnd(wasThePart: false, more: false)
      }
      var wasThePart = false
      if case .receiving(let part) = approval.part, part.offer == transfer.id {
        Self.closePart(of: &approval, failed: failed)
        approvals[fingerprint] = approval
        wasThePart = true
      }
      let done = approval.done
      guard !failed, let summary = approval.summary, done.files + done.folders > 0 else {
        return PartEnd(wasThePart: wasThePart, more: false)
      }
      return PartEnd(
        wasThePart: wasThePart,
        more: done.files < summary.files || done.folders < summary.folders ?? 0)
    }
  }

  /// Ends the part being received, if one is: received whole, its tally is what is spent;
  /// failed, what it settled is.
  private static func closePart(of approval: inout Approval, failed: Bool) {
    guard case .receiving(let part) = approval.part else { return }
    if failed {
      approval.done = approval.done + part.settledTally
      approval.settled.formUnion(part.settled)
      approval.failures += 1
      approval.part = .failed(part)
    } else {
      approval.done = part.tally
      approval.part = .finished
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

  /// Takes `invitation` back when it comes back for an approval: the same key under the same
  /// name, not looking like another peer, announcing the same batch (`summary`), unfinished,
  /// carried over fewer than ``maximumResumes`` times, whose link was lost at most `grace` ago
  /// — or is still up here (`isConnected`: the sender knows better that it is dead). The
  /// approval is then carried over to it (recorded, as by a yes) under the same lock as the
  /// check, so that nothing the old link settles or is admitted meanwhile is lost; returned as
  /// it stood. Nil when it must be asked about.
  func resume(
    _ invitation: Invitation, summary: OfferSummary?, within grace: Duration, isConnected: Bool
  ) -> Approval? {
    guard grace > .zero, let summary else { return nil }
    return approvals.withLock { approvals in
      guard let approval = approvals[invitation.fingerprint],
        Self.announcesAgain(approval, invitation, summary),
        approval.resumes < Self.maximumResumes, approval.failures < Self.maximumResumes
      else { return nil }
      // A part still arriving on the old link: its files would be counted late, or not at all.
      if case .receiving = approval.part { return nil }
      switch approval.batch {
      case .underWay: guard isConnected else { return nil }
      case .lost(let when): guard ContinuousClock.now - when <= grace else { return nil }
      case .ended: return nil
      }
      approvals[invitation.fingerprint] = Self.approval(
        invitation.peer, status: invitation.status, code: invitation.verificationCode,
        summary: summary, byPolicy: false, carrying: approval)
      return approval
    }
  }

  /// The link to `fingerprint` was lost (a drop, a stall, a close): an unfinished batch may
  /// come back within the grace. A part whose transfer began is ended by that transfer's end
  /// (``partEnded(_:failed:)``), never here — a late report of an old link must not end the part
  /// a new link carries; one whose offer was withdrawn before it began failed.
  func linkLost(_ fingerprint: Fingerprint) {
    approvals.withLock { approvals in
      guard var approval = approvals[fingerprint] else { return }
      if case .receiving(let part) = approval.part, !part.started {
        Self.closePart(of: &approval, failed: true)
      }
      if case .underWay = approval.batch { approval.batch = .lost(.now) }
      approvals[fingerprint] = approval
    }
  }

  /// The batch from `fingerprint` ended: nothing of it is resumed or admitted without asking.
  func ended(_ fingerprint: Fingerprint) {
    approvals.withLock { approvals in
      guard var approval = approvals[fingerprint] else { return }
      Self.closePart(of: &approval, failed: true)
      approval.batch = .ended
      approvals[fingerprint] = approval
    }
  }
}
