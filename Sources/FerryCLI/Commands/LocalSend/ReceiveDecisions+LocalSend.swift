import Ferry
import FerryLocalSend

extension ReceiveDecisions {
  /// Accepts or declines a LocalSend sender's files, on their real list: LocalSend has no
  /// invitation before the files, so the one question is about them. The policy applies as to
  /// a Ferry sender — to the key its certificate proved; a sender that proved none
  /// (`--localsend-unverified`) is never accepted by `--accept-from`, `--accept-trusted` or a known
  /// name, only by `--yes` or a person.
  func decide(localSend offer: ResourceOffer, from sender: LocalSendSender, knownPeers: KnownPeers)
    async
  {
    let status = Self.status(of: sender, in: knownPeers)
    prompt.announce(localSend: sender, status: status, offer: offer, text: false)
    // Anyone on the network can offer: what is refused before anyone decides is never
    // --once's outcome (the one offer is the first one accepted or asked about).
    if oneFile && (offer.files.count != 1 || !offer.folders.isEmpty) {
      return decline(offer, "this receiver takes one file (--stdout)", counts: false)
    }
    if let lack = folder.lackOfSpace(for: offer.totalBytes) {
      return decline(offer, "\(lack) on the receiver", counts: false)
    }
    let decision = Self.decision(policy, for: sender, status: status)
    if let decision, !decision.accept {
      return decline(offer, decision.reason, counts: false)
    }
    guard gate?.claimForDecision(from: offer.peer.fingerprint) ?? true else {
      return decline(offer, "this receiver takes one offer (--once)", counts: false)
    }
    if decision?.accept == true {
      warn(sender, status: status)
      return accept(localSend: offer, from: sender, knownPeers: knownPeers)
    }
    switch await prompt.ask(localSend: offer, from: sender, status: status) {
    case .yes: accept(localSend: offer, from: sender, knownPeers: knownPeers)
    case .no: decline(offer, "the person at the receiver said no", counts: true)
    case .noAnswer: decline(offer, "no answer at the receiver", counts: true)
    case .withdrawn:
      output.emit(Withdrawn(peer: offer.peer.displayName))
      gate?.decided(accepted: false)
      if gate != nil {
        outcomes.yield(
          CLIFailure(
            status: .transferFailed, message: "the sender withdrew its offer", code: .cancelled))
      }
    }
  }

  /// Shows or declines a LocalSend sender's text message, by the policy or by asking.
  func decide(localSend text: LocalSendText, knownPeers: KnownPeers) async {
    let sender = text.sender
    let status = Self.status(of: sender, in: knownPeers)
    prompt.announce(localSend: sender, status: status, offer: nil, text: true)
    var shown: Bool
    var reason = "the person at the receiver said no"
    if let decision = Self.decision(policy, for: sender, status: status) {
      shown = decision.accept
      if !decision.reason.isEmpty { reason = decision.reason }
    } else {
      switch await prompt.ask(localSend: text, status: status) {
      case .yes: shown = true
      case .no: shown = false
      case .noAnswer: (shown, reason) = (false, "no answer at the receiver")
      case .withdrawn:
        output.emit(Withdrawn(peer: sender.peer.displayName))
        return
      }
    }
    if shown, let gate, !gate.claimForText() {
      (shown, reason) = (false, "this receiver takes one offer (--once)")
    }
    guard shown else {
      text.decline(reason: reason)
      output.emit(Declined(peer: sender.peer.displayName, reason: reason))
      prompt.bar.above { output.note("Declined the text of \(sender) (\(reason)).") }
      return
    }
    // Too late (it timed out while it was asked): the sender was told no; nothing is shown.
    guard text.show() else {
      output.emit(Withdrawn(peer: sender.peer.displayName))
      return
    }
    if sender.verified { try? knownPeers.recordSeen(sender.peer) }
    show(text.text, from: sender.peer)
  }

  /// Accepts a LocalSend sender's files; a proven key is remembered as a Ferry sender's is.
  private func accept(
    localSend offer: ResourceOffer, from sender: LocalSendSender, knownPeers: KnownPeers
  ) {
    if sender.verified { try? knownPeers.recordSeen(sender.peer) }
    output.emit(ReceiveAccepted(peer: sender.peer.displayName, resumed: false))
    prompt.bar.above { output.note("Accepted \(sender).") }
    accept(offer)
    // --once: an offer its sender dropped while it was decided never starts; then it is over
    // (the library reports nothing of an offer that never began).
    guard let gate else { return }
    Task { [outcomes, peer = sender.peer] in
      try? await Task.sleep(for: .seconds(30))
      if gate.acceptedButNeverStarted(from: peer.fingerprint) {
        outcomes.yield(
          CLIFailure(
            status: .transferFailed, message: "\(peer) went away before its files came",
            code: .cancelled))
      }
    }
  }

  /// The loud warning for a changed key or a look-alike name, when the policy decided alone.
  private func warn(_ sender: LocalSendSender, status: KnownPeers.Status) {
    guard sender.verified,
      let warning = InvitationPrompt.warning(
        status, name: sender.peer.displayName, now: sender.peer.fingerprint)
    else { return }
    prompt.bar.above { output.note(warning) }
  }

  /// What is known of `sender`'s key: nothing (new) for one its certificate did not prove.
  private static func status(of sender: LocalSendSender, in knownPeers: KnownPeers)
    -> KnownPeers.Status
  {
    guard sender.verified else { return .new }
    return (try? knownPeers.status(of: sender.peer)) ?? .new
  }

  /// The policy's answer for `sender`: `--yes` takes everyone; an accept list or trust takes
  /// only a key a certificate proved — an unverified sender is asked about when others are,
  /// declined otherwise.
  private static func decision(
    _ policy: ReceivePolicy, for sender: LocalSendSender, status: KnownPeers.Status
  ) -> (accept: Bool, reason: String)? {
    if sender.verified { return policy.decision(for: sender.peer.fingerprint, status: status) }
    switch policy {
    case .ask: return nil
    case .everyone: return (true, "")
    case .senders(_, _, let askOthers):
      return askOthers ? nil : (false, "an unverified LocalSend sender is not an accepted sender")
    }
  }
}
