import Ferry

extension Receiver {
  /// Accepts or declines one offer from an accepted Ferry sender: on its real files, while
  /// they are the next part of what its invitation announced (the names shown first; together
  /// no more files, bytes or hidden files; nothing outside the top-level entries listed; one
  /// part at a time) — or, accepted by a standing rule, whatever it offers. Any other offer
  /// (one that differs, or one after the batch) is asked about on its own real files.
  func decide(_ offer: ResourceOffer) async {
    let sender = offer.peer.fingerprint
    guard let approval = approvals.next(sender) else {
      return decline(offer, "not an accepted sender", counts: false)
    }
    open.add(offer)
    defer { open.remove(offer) }
    // The part before may have ended with its report still on its way (the session's offers
    // and its events are two streams): wait for it, a bounded while, before anything is
    // decided — --once's gate follows the part's end, and this may be the next part.
    await partEnds.wait(for: sender, until: .now + Self.partEndWait) { [approvals, gate] in
      approvals.isReceivingPart(sender) || gate?.isReceiving(from: sender) == true
    }
    let isTheOne = gate?.claimForDecision(from: sender) ?? true
    guard isTheOne else {
      return decline(offer, Self.oneOfferOnly, counts: false)
    }
    if configuration.oneFile && (offer.files.count != 1 || !offer.folders.isEmpty) {
      return decline(offer, "this receiver takes one file (--stdout)", counts: true)
    }
    let first = approval.offers == 0
    let reason: ConsentQuestion.OfferReason
    // Counted as the batch's next part when it is one, also under a standing rule (so that
    // --once waits for the whole batch). Files it settled before under this approval are
    // never written again, whoever decides.
    let admission = approvals.admit(
      sender, offer.files, folders: offer.folders, streamed: offer.streamed, offer: offer.id)
    if approval.byPolicy || admission.admitted {
      return accept(offer, receivedBefore: admission.receivedBefore)
    } else if first, let summary = approval.summary {
      reason = .differsFrom(summary)
    } else {
      reason = first ? .unannounced : .later
    }
    // A person said yes to something else (or to nothing in particular): ask about these
    // files.
    let question = ConsentQuestion(
      sender: SenderFacts(peer: offer.peer, status: approval.status, verified: true),
      subject: .offer(OfferFacts(offer), because: reason), code: approval.code,
      deadline: .now + ResourceOffer.decisionTimeout - Self.offerMargin, urgent: true,
      isPending: { offer.isPending })
    switch await decider.decide(question) {
    case .yes: accept(offer, receivedBefore: admission.receivedBefore)
    case .no: decline(offer, Self.saidNo, counts: true)
    case .noAnswer: decline(offer, Self.noAnswer, counts: true)
    case .withdrawn:
      approvals.ended(sender)
      partEnds.signal(sender)
      reportWithdrawn(offer)
    }
  }

  /// How long an offer waits for the end of the part before it to be reported.
  static let partEndWait: Duration = .seconds(2)

  /// How long before an offer's decision times out its question ends unanswered.
  static let offerMargin: Duration = .seconds(5)

  /// `offer` was withdrawn by its sender before it was accepted: said, and under `--once` the
  /// outcome.
  func reportWithdrawn(_ offer: ResourceOffer) {
    emit(.withdrawn(offer.peer))
    gate?.decided(accepted: false)
    if gate != nil { finish(.withdrawn(offer.peer)) }
  }

  /// Accepts `offer`; its paths in `receivedBefore` (settled before under the same approval)
  /// are answered without being written.
  func accept(_ offer: ResourceOffer, receivedBefore: Set<String> = []) {
    guard offer.isPending else {
      // Withdrawn while it was decided (its sender cancelled it, or its link closed):
      // nothing will come of it, so it is no part under way, and not --once's outcome to
      // wait for.
      approvals.abandoned(offer.peer.fingerprint, offer: offer.id)
      partEnds.signal(offer.peer.fingerprint)
      reportWithdrawn(offer)
      return
    }
    gate?.decided(accepted: true)
    var options = configuration.options
    options.receivedBefore = receivedBefore
    offer.accept(options)
  }

  /// Declines `offer`; when it is `--once`'s one offer (`counts`), that is the outcome.
  func decline(_ offer: ResourceOffer, _ reason: String, counts: Bool) {
    offer.decline(reason: reason)
    if counts {
      approvals.ended(offer.peer.fingerprint)
      partEnds.signal(offer.peer.fingerprint)
    }
    emit(
      .offerDeclined(
        offer.peer, reason: reason, files: offer.files.count, bytes: offer.totalBytes))
    if counts, gate != nil {
      gate?.decided(accepted: false)
      finish(.declined(offer.peer, reason: reason))
    }
  }
}
