import Ferry
import FerryLocalSend

extension Receiver {
  /// Accepts or declines a LocalSend sender's (or a browser's) files, on their real list:
  /// LocalSend has no invitation before the files, so the one question is about them. The
  /// standing rule applies as to a Ferry sender — to the key its certificate proved; a sender
  /// that proved none is never accepted by an accept list or trust, only by `--yes` or a
  /// person.
  func decide(localSend offer: ResourceOffer, from sender: LocalSendSender) async {
    let status = status(of: sender)
    emit(.localSendAsked(sender, status: status, offer: OfferFacts(offer)))
    open.add(offer)
    defer { open.remove(offer) }
    // Anyone on the network can offer: what is refused before anyone decides is never
    // --once's outcome (the one offer is the first one accepted or asked about).
    if configuration.oneFile && (offer.files.count != 1 || !offer.folders.isEmpty) {
      return decline(offer, "this receiver takes one file (--stdout)", counts: false)
    }
    if let lack = space.lackOfSpace(for: offer.totalBytes) {
      return decline(offer, "\(lack) on the receiver", counts: false)
    }
    let facts = SenderFacts(peer: sender.peer, status: status, verified: sender.verified)
    let decision = decider.standingAnswer(for: facts)
    if let decision, !decision.accept {
      return decline(offer, decision.reason, counts: false)
    }
    guard gate?.claimForDecision(from: offer.peer.fingerprint) ?? true else {
      return decline(offer, Self.oneOfferOnly, counts: false)
    }
    if decision?.accept == true {
      if sender.verified { emit(.suspicious(sender.peer, status: status)) }
      return accept(localSend: offer, from: sender)
    }
    let question = ConsentQuestion(
      sender: facts, subject: .localSendFiles(OfferFacts(offer), from: sender), code: nil,
      deadline: .now + ResourceOffer.decisionTimeout - Self.offerMargin, urgent: true,
      isPending: { offer.isPending })
    switch await decider.decide(question) {
    case .yes: accept(localSend: offer, from: sender)
    case .no: decline(offer, Self.saidNo, counts: true)
    case .noAnswer: decline(offer, Self.noAnswer, counts: true)
    case .withdrawn:
      emit(.withdrawn(offer.peer))
      gate?.decided(accepted: false)
      if gate != nil { finish(.withdrawn(offer.peer)) }
    }
  }

  /// Shows or declines a LocalSend sender's text message, by the standing rule or by asking.
  func decide(localSend text: LocalSendText) async {
    let sender = text.sender
    let status = status(of: sender)
    emit(.localSendAsked(sender, status: status, offer: nil))
    open.add(
      ObjectIdentifier(text), isPending: { text.isPending },
      decline: { text.decline(reason: $0) })
    defer { open.remove(text) }
    var shown: Bool
    var reason = Self.saidNo
    let facts = SenderFacts(peer: sender.peer, status: status, verified: sender.verified)
    if let decision = decider.standingAnswer(for: facts) {
      shown = decision.accept
      if !decision.reason.isEmpty { reason = decision.reason }
    } else {
      let question = ConsentQuestion(
        sender: facts, subject: .localSendText(bytes: text.text.utf8.count, from: sender),
        code: nil, deadline: .now + ResourceOffer.decisionTimeout - Self.offerMargin,
        urgent: true, isPending: { text.isPending })
      switch await decider.decide(question) {
      case .yes: shown = true
      case .no: shown = false
      case .noAnswer: (shown, reason) = (false, Self.noAnswer)
      case .withdrawn:
        emit(.withdrawn(sender.peer))
        return
      }
    }
    // Withdrawn meanwhile (its sender hung up, or it timed out): the sender was told no;
    // nothing is claimed, nothing shown.
    guard text.isPending else {
      emit(.withdrawn(sender.peer))
      return
    }
    if shown, let gate, !gate.claimForText() {
      (shown, reason) = (false, Self.oneOfferOnly)
    }
    guard shown else {
      text.decline(reason: reason)
      emit(.declined(.localSend(sender), reason: reason, text: true))
      return
    }
    // Too late after all (it timed out between the check and now): the sender was told no.
    guard text.show() else {
      emit(.withdrawn(sender.peer))
      // --once: the gate was claimed for it, so nothing else can be the outcome.
      if gate != nil { finish(.withdrawn(sender.peer)) }
      return
    }
    if sender.verified { try? knownPeers.recordSeen(sender.peer) }
    show(text.text, from: sender.peer)
  }

  /// Accepts a LocalSend sender's files; a proven key is remembered as a Ferry sender's is.
  private func accept(localSend offer: ResourceOffer, from sender: LocalSendSender) {
    guard offer.isPending else {
      // Withdrawn while it was decided: said, and under --once the outcome.
      return reportWithdrawn(offer)
    }
    if sender.verified { try? knownPeers.recordSeen(sender.peer) }
    emit(.accepted(.localSend(sender), code: nil, resumed: false))
    accept(offer)
    // --once: an offer its sender dropped while it was decided never starts; then it is over
    // (the library reports nothing of an offer that never began).
    guard let gate else { return }
    inBackground { [self, peer = sender.peer] in
      try? await Task.sleep(for: Self.neverStartedWait)
      if gate.acceptedButNeverStarted(from: peer.fingerprint) { finish(.neverStarted(peer)) }
    }
  }

  /// How long an offer accepted under `--once` may take to begin before it is given up on.
  static let neverStartedWait: Duration = .seconds(30)

  /// What is known of `sender`'s key: nothing (new) for one its certificate did not prove.
  func status(of sender: LocalSendSender) -> KnownPeers.Status {
    guard sender.verified else { return .new }
    return (try? knownPeers.status(of: sender.peer)) ?? .new
  }
}
