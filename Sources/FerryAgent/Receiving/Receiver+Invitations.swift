import Ferry

extension Receiver {
  /// Accepts or declines one Ferry invitation: declined at once when it cannot be received
  /// (`--stdout` and more than one file, not enough room), else by the decider's standing rule,
  /// or taken back within the resume grace (the same key and batch whose link was lost; a
  /// comeback waits, ``comebackWait`` at most, for the end of the part still received here),
  /// or by asking. A yes binds: offers on the connection are accepted only as far as the batch
  /// announced (``Approvals``).
  func decide(_ invitation: Invitation, session: Session) async {
    open.add(invitation)
    defer { open.remove(invitation) }
    // Invitations are asked about one at a time; one that waited behind another question
    // may have been withdrawn meanwhile.
    guard invitation.isPending else {
      emit(.gaveUpBeforeAsked(invitation.peer))
      return
    }
    let summary = OfferSummary.decode(invitation.context)
    emit(.invitation(invitation, summary: summary))
    let sender = SenderFacts(peer: invitation.peer, status: invitation.status, verified: true)
    var accept: Bool
    var reason = Self.saidNo
    var resumed: Approvals.Approval?
    var byPolicy = false
    // --once: a decline that is the one offer's outcome.
    var isOutcome = false
    // A sender coming back after a lost link may be here before this side has heard of the
    // loss (the old part's end comes on another stream, after the offer's last flush): wait
    // for that part's end, a bounded while, before deciding whether this is a comeback — else
    // a person who said yes once is asked again.
    let fingerprint = invitation.fingerprint
    if configuration.resumeGrace > .zero, decider.standingAnswer(for: sender) == nil,
      approvals.awaitsPartEnd(of: invitation, summary: summary)
    {
      let deadline = min(
        ContinuousClock.now + Self.comebackWait, invitation.expiresAt - Self.invitationMargin)
      await partEnds.wait(for: fingerprint, until: deadline) { [approvals] in
        approvals.isReceivingPart(fingerprint)
      }
      // Withdrawn (or declined by a stop) meanwhile: nothing to decide.
      guard invitation.isPending else {
        emit(.gaveUpBeforeAsked(invitation.peer))
        return
      }
    }
    let isConnected = session.connectedPeers.contains { $0.fingerprint == invitation.fingerprint }
    if configuration.oneFile, let summary, summary.text == nil,
      summary.entries != 1 || summary.files != 1
    {
      emit(.suspicious(invitation.peer, status: invitation.status))
      accept = false
      reason =
        "this receiver takes one file (--stdout); \(Quantity.count(summary.files, "file")) "
        + "announced"
    } else if let summary, let lack = space.lackOfSpace(for: summary.bytes) {
      emit(.suspicious(invitation.peer, status: invitation.status))
      // Before anyone is asked: a yes could only end in a refused offer.
      accept = false
      reason = "\(lack) on the receiver"
      // --once: from a sender the standing rule accepts, this is the one offer, refused (as
      // the library refuses an offer for want of room); anyone else's is only declined.
      isOutcome = decider.standingAnswer(for: sender)?.accept == true
    } else if let decision = decider.standingAnswer(for: sender) {
      emit(.suspicious(invitation.peer, status: invitation.status))
      (accept, byPolicy) = (decision.accept, true)
      if !decision.reason.isEmpty { reason = decision.reason }
    } else if let earlier = approvals.resume(
      invitation, summary: summary, within: configuration.resumeGrace, isConnected: isConnected)
    {
      // The person said yes to this very batch from this very key; its link was lost. Taken
      // back (and recorded) at once, under one lock with the check.
      emit(.suspicious(invitation.peer, status: invitation.status))
      (accept, resumed) = (true, earlier)
      emit(.resuming(invitation.peer, files: earlier.summary?.files))
    } else {
      let question = ConsentQuestion(
        sender: sender, subject: .invitation(summary), code: invitation.verificationCode,
        deadline: invitation.expiresAt - Self.invitationMargin, urgent: false,
        isPending: { invitation.isPending })
      switch await decider.decide(question) {
      case .yes: accept = true
      case .no: accept = false
      case .noAnswer:
        accept = false
        reason = Self.noAnswer
      case .withdrawn:
        emit(.withdrawn(invitation.peer))
        return
      }
    }
    // --once (and --stdout): a text is the one offer too; nothing comes after it.
    let isText = summary?.text != nil
    if accept, isText, let gate, !gate.claimForText() {
      (accept, reason) = (false, Self.oneOfferOnly)
    }
    guard accept else {
      invitation.decline(reason: reason)
      emit(.declined(.ferry(invitation.peer), reason: reason, text: false))
      if isOutcome, let gate, gate.claimRefusal(from: invitation.fingerprint) {
        // The DECLINE needs a moment on the wire before the receiver ends (the invitation's
        // connection is not a session link the end waits for).
        try? await Task.sleep(for: .milliseconds(500))
        finish(.refusedForSpace(invitation.peer, reason: reason))
      }
      return
    }
    if resumed == nil {
      approvals.record(invitation, summary: summary, byPolicy: byPolicy)
    }
    // --once: the one offer's sender coming back replaces its old link; the old transfer's
    // late end is no longer the outcome, and the wait for the new offer is bounded.
    if !isText, let gate, let generation = gate.expectResume(from: invitation.fingerprint) {
      let wait = max(configuration.resumeGrace, Self.resumeFloor)
      inBackground { [self, peer = invitation.peer] in
        try? await Task.sleep(for: wait)
        if gate.resumeExpired(generation: generation) { finish(.didNotResume(peer)) }
      }
    }
    do {
      try await invitation.accept(into: session)
      emit(
        .accepted(
          .ferry(invitation.peer), code: invitation.verificationCode, resumed: resumed != nil))
      if let text = summary?.text { show(text, from: invitation.peer) }
    } catch {
      emit(.acceptFailed(invitation.peer, error))
      // Nothing to come back to: the next invitation is asked about.
      approvals.ended(invitation.fingerprint)
      partEnds.signal(invitation.fingerprint)
      // --once: the text was the one; it never arrived.
      if isText, gate != nil { finish(.acceptFailed(invitation.peer, error)) }
    }
  }

  /// Shows an accepted sender's text (``ReceiverEvent/text(_:_:)``); with
  /// ``Configuration/once`` the text is the outcome.
  func show(_ text: String, from peer: PeerID) {
    // Its approval covers the text alone: no offer may follow on it.
    approvals.ended(peer.fingerprint)
    partEnds.signal(peer.fingerprint)
    emit(.text(peer, text))
    if gate != nil { finish(.received(nil)) }
  }

  /// How long before an invitation expires its question ends unanswered, so that the decline
  /// (with its reason) reaches the sender before its own timeout does.
  static let invitationMargin: Duration = .seconds(1)

  /// How long an invitation from a sender whose part is still being received here waits for
  /// that part's end before it is decided (a comeback after a lost link usually arrives within
  /// a second or two of the loss; the receiver's last flush may take longer on a busy disk).
  static let comebackWait: Duration = .seconds(10)

  /// How long, at least, `--once` waits for the one offer's sender that came back to offer.
  static let resumeFloor: Duration = .seconds(30)

  /// The reason a sender is given when the person said no.
  static let saidNo = "the person at the receiver said no"

  /// The reason a sender is given when nobody answered in time.
  static let noAnswer = "no answer at the receiver"

  /// The reason a later sender is given under ``Configuration/once``.
  static let oneOfferOnly = "this receiver takes one offer (--once)"
}
