import Ferry
import Foundation

/// What `ferry receive` answers, to invitations and then to the offers of accepted senders.
///
/// An invitation is accepted by the policy (`--yes`, `--accept-from`) or by the person at the
/// terminal, who sees what the sender *says* it will send. That approval binds: offers on the
/// connection are accepted only while they are what was announced (the names shown first;
/// together no more files, bytes or hidden files, nothing outside the top-level entries listed;
/// a batch larger than one offer comes as consecutive offers, one at a time); any other offer
/// — one that differs, or one after the batch — is asked about on its own real files, and
/// declined with no terminal or under `--once`.
struct ReceiveDecisions: Sendable {
  let policy: ReceivePolicy
  let approvals: Approvals
  let gate: OnceGate?
  let options: ReceiveOptions
  /// The destination, for its free space.
  let folder: ReceiveDestination
  /// How long a sender whose link was lost may come back for the same batch and be accepted
  /// without asking again (`--resume-grace`).
  let resumeGrace: Duration
  let prompt: InvitationPrompt
  let outcomes: AsyncStream<CLIFailure?>.Continuation
  /// The invitations not answered yet, for Ctrl-C to decline.
  let open: OpenInvitations
  /// `--stdout`: one file (or a text) is all this receiver takes.
  var oneFile = false

  var output: EventWriter { prompt.output }

  /// Accepts or declines one invitation: by the policy, or by asking.
  func decide(_ invitation: Invitation, session: Session) async {
    open.add(invitation)
    defer { open.remove(invitation) }
    // Invitations are asked about one at a time; one that waited behind another prompt may
    // have been withdrawn meanwhile.
    guard invitation.isPending else {
      output.emit(Withdrawn(peer: invitation.peer.displayName))
      prompt.bar.above {
        output.note("\(invitation.peer) gave up waiting before it could be asked about.")
      }
      return
    }
    let summary = OfferSummary.decode(invitation.context)
    prompt.announce(invitation, summary: summary)
    var accept: Bool
    var reason = "the person at the receiver said no"
    var resumed: Approvals.Approval?
    var byPolicy = false
    // --once: a decline that is the one offer's outcome.
    var isOutcome = false
    let isConnected = session.connectedPeers.contains { $0.fingerprint == invitation.fingerprint }
    if oneFile, let summary, summary.text == nil, summary.entries != 1 || summary.files != 1 {
      prompt.warn(invitation)
      accept = false
      reason =
        "this receiver takes one file (--stdout); \(Quantity.count(summary.files, "file")) "
        + "announced"
    } else if let summary, let lack = folder.lackOfSpace(for: summary.bytes) {
      prompt.warn(invitation)
      // Before anyone is asked: a yes could only end in a refused offer.
      accept = false
      reason = "\(lack) on the receiver"
      // --once: from a sender the policy accepts, this is the one offer, refused (exit 1) as
      // the library refuses an offer for want of room; anyone else's is only declined.
      isOutcome = policy.decision(for: invitation)?.accept == true
    } else if let decision = policy.decision(for: invitation) {
      prompt.warn(invitation)
      (accept, byPolicy) = (decision.accept, true)
      if !decision.reason.isEmpty { reason = decision.reason }
    } else if let earlier = approvals.resumable(
      invitation, summary: summary, within: resumeGrace, isConnected: isConnected)
    {
      // The person said yes to this very batch from this very key; its link was lost.
      prompt.warn(invitation)
      (accept, resumed) = (true, earlier)
      let files = earlier.summary.map { "the \(Quantity.count($0.files, "file"))" } ?? "the files"
      prompt.bar.above {
        output.note(
          "\(invitation.peer) lost its connection and is back for \(files) accepted before; "
            + "resuming without asking again (--resume-grace).")
      }
    } else {
      switch await prompt.ask(invitation, summary: summary) {
      case .yes: accept = true
      case .no: accept = false
      case .noAnswer:
        accept = false
        reason = "no answer at the receiver"
      case .withdrawn:
        output.emit(Withdrawn(peer: invitation.peer.displayName))
        return
      }
    }
    // --once (and --stdout): a text is the one offer too; nothing comes after it.
    let isText = summary?.text != nil
    if accept, isText, let gate, !gate.claimForText() {
      (accept, reason) = (false, "this receiver takes one offer (--once)")
    }
    guard accept else {
      invitation.decline(reason: reason)
      output.emit(Declined(peer: invitation.peer.displayName, reason: reason))
      prompt.bar.above { output.note("Declined \(invitation.peer) (\(reason)).") }
      if isOutcome, let gate, gate.claimRefusal(from: invitation.fingerprint) {
        // The DECLINE needs a moment on the wire before --once ends the process (the
        // invitation's connection is not a session link the end waits for).
        try? await Task.sleep(for: .milliseconds(500))
        outcomes.yield(
          CLIFailure(
            status: .transferFailed,
            message: "refused the files from \(invitation.peer) (\(reason))", code: .refused))
      }
      return
    }
    approvals.record(invitation, summary: summary, byPolicy: byPolicy, carrying: resumed)
    // --once: the one offer's sender coming back replaces its old link; the old transfer's
    // late end is no longer the outcome, and the wait for the new offer is bounded.
    if !isText, let gate, let generation = gate.expectResume(from: invitation.fingerprint) {
      Task { [outcomes, resumeGrace, peer = invitation.peer] in
        try? await Task.sleep(for: max(resumeGrace, .seconds(30)))
        if gate.resumeExpired(generation: generation) {
          outcomes.yield(
            CLIFailure(
              status: .transferFailed, message: "\(peer) came back but did not resume its files",
              code: .peerDisconnected))
        }
      }
    }
    do {
      try await invitation.accept(into: session)
      output.emit(ReceiveAccepted(peer: invitation.peer.displayName, resumed: resumed != nil))
      prompt.bar.above {
        output.note(
          "Accepted \(invitation.peer), verification code \(invitation.verificationCode).")
      }
      if let text = summary?.text { show(text, from: invitation.peer) }
    } catch {
      output.emit(
        Failure(
          code: .acceptFailed, message: error.description, peer: invitation.peer.displayName))
      prompt.bar.above { output.note("Could not accept \(invitation.peer): \(error)") }
      // Nothing to come back to: the next invitation is asked about.
      approvals.ended(invitation.fingerprint)
      if isText, gate != nil {
        // --once: the text was the one; it never arrived.
        outcomes.yield(
          CLIFailure(
            status: .transferFailed,
            message: "could not accept the text from \(invitation.peer): \(error)",
            code: .acceptFailed))
      }
    }
  }

  /// Shows an accepted sender's text: a `text` event, or its lines on stdout (escaped: a
  /// peer's text never moves the cursor). Under `--once` the text is the outcome.
  func show(_ text: String, from peer: PeerID) {
    // Its approval covers the text alone: no offer may follow on it.
    approvals.ended(peer.fingerprint)
    output.emit(TextReceived(peer: peer.displayName, text: text))
    if oneFile {
      // --stdout: the text is the data; escaped only when a terminal would act on it.
      let terminal = StandardStream.output.isTerminal
      StandardStream.output.write(terminal ? DisplayText.terminalSafe(text) + "\n" : text)
    } else if !output.json {
      // Even with --quiet (it was accepted to be read), each line marked as the peer's, so
      // that none can pass for one of ferry's own.
      prompt.bar.above {
        StandardStream.output.write(
          "\(DisplayText.terminalSafe(peer.description)) says:\n" + Self.markedLines(text))
      }
    }
    if gate != nil { outcomes.yield(nil) }
  }

  /// A peer's text as the lines a terminal shows, each marked `  | ` and escaped. Split on the
  /// byte a terminal starts a line at (0x0A), never on Swift's `Character`s: "\r\n" is one
  /// Character, and split on "\n" it kept its newline, so a line began unmarked and could pass
  /// for one of ferry's own.
  static func markedLines(_ text: String) -> String {
    var shown = ""
    for line in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false) {
      shown += "  | " + DisplayText.terminalSafe(String(decoding: line, as: UTF8.self)) + "\n"
    }
    return shown
  }

  /// Accepts or declines one offer from an accepted sender (see the type's description).
  func decide(_ offer: ResourceOffer) async {
    guard let approval = approvals.next(offer.peer.fingerprint) else {
      return decline(offer, "not an accepted sender", counts: false)
    }
    // The part before may have ended with its report still on its way (the session's offers
    // and its events are two streams): wait for it, a bounded while, before anything is
    // decided — --once's gate follows the part's end, and this may be the next part.
    let deadline = ContinuousClock.now + Self.partEndWait
    while approvals.isReceivingPart(offer.peer.fingerprint), ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(20))
    }
    let isTheOne = gate?.claimForDecision(from: offer.peer.fingerprint) ?? true
    guard isTheOne else {
      return decline(offer, "this receiver takes one offer (--once)", counts: false)
    }
    if oneFile && (offer.files.count != 1 || !offer.folders.isEmpty) {
      return decline(offer, "this receiver takes one file (--stdout)", counts: true)
    }
    let first = approval.offers == 0
    let question: InvitationPrompt.OfferQuestion
    // Counted as the batch's next part when it is one, also under a policy (so that --once
    // waits for the whole batch).
    // Files it settled before under this approval are never written again, whoever decides.
    let admission = approvals.admit(
      offer.peer.fingerprint, offer.files, folders: offer.folders, streamed: offer.streamed,
      offer: offer.id)
    if approval.byPolicy || admission.admitted {
      return accept(offer, receivedBefore: admission.receivedBefore)
    } else if first, let summary = approval.summary {
      question = .differsFrom(summary)
    } else {
      question = first ? .unannounced : .later
    }
    // A person said yes to something else (or to nothing in particular): ask about these files.
    let answer = await prompt.ask(
      offer, status: approval.status, code: approval.code, because: question)
    switch answer {
    case .yes: accept(offer)
    case .no: decline(offer, "the person at the receiver said no", counts: true)
    case .noAnswer: decline(offer, "no answer at the receiver", counts: true)
    case .withdrawn:
      approvals.ended(offer.peer.fingerprint)
      reportWithdrawn(offer)
    }
  }

  /// `offer` was withdrawn by its sender before it was accepted: said, and under `--once` the
  /// outcome.
  private func reportWithdrawn(_ offer: ResourceOffer) {
    output.emit(Withdrawn(peer: offer.peer.displayName))
    gate?.decided(accepted: false)
    if gate != nil {
      outcomes.yield(
        CLIFailure(
          status: .transferFailed, message: "the sender withdrew its offer", code: .cancelled))
    }
  }

  /// How long an offer waits for the end of the part before it to be reported.
  static let partEndWait: Duration = .seconds(2)

  /// Accepts `offer`; its paths in `receivedBefore` are answered without being written.
  func accept(_ offer: ResourceOffer, receivedBefore: Set<String> = []) {
    guard offer.isPending else {
      // Withdrawn while it was decided (its sender cancelled it, or its link closed): nothing
      // will come of it, so it is no part under way, and not --once's outcome to wait for.
      approvals.abandoned(offer.peer.fingerprint, offer: offer.id)
      reportWithdrawn(offer)
      return
    }
    gate?.decided(accepted: true)
    var options = options
    options.receivedBefore = receivedBefore
    offer.accept(options)
  }

  /// Declines `offer`; when it is `--once`'s one offer (`counts`), that is the outcome.
  func decline(_ offer: ResourceOffer, _ reason: String, counts: Bool) {
    offer.decline(reason: reason)
    if counts { approvals.ended(offer.peer.fingerprint) }
    output.emit(
      OfferDeclined(
        peer: offer.peer.displayName, reason: reason, files: offer.files.count,
        bytes: Int(offer.totalBytes)))
    prompt.bar.above {
      output.note(
        "Declined \(Quantity.count(offer.files.count, "file")), \(Quantity.bytes(offer.totalBytes)) from "
          + "\(offer.peer) (\(reason)).")
    }
    if counts, gate != nil {
      gate?.decided(accepted: false)
      outcomes.yield(
        CLIFailure(
          status: .declined, message: "declined the offer from \(offer.peer) (\(reason))",
          code: .declined))
    }
  }
}
