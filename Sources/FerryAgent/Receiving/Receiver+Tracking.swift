import Ferry

extension Receiver {
  /// Keeps the consent budget and `--once`'s gate in step with what the library reports of
  /// accepted offers, and reports it. `refusalBeforeDecision`: whether an offer refused before
  /// anyone decided on it (an unsafe path, say) may be `--once`'s outcome — it is for a Ferry
  /// sender, whose invitation was accepted; not for a LocalSend sender, which anyone can be.
  func track(_ event: ResourceEvent, refusalBeforeDecision: Bool) {
    switch event {
    case .offerReceived(let transfer):
      approvals.started(transfer)
      gate?.receiving(transfer)
      transfers.add(transfer)
      emit(.transferStarted(transfer, batch: approvals.part(of: transfer.peer.fingerprint)))
    case .started:
      break
    case .finished(let name, let peer, .success, _), .identical(let name, let peer, _, _):
      approvals.settled(peer.fingerprint, path: name)
      emit(.resource(event))
    case .finished(_, _, .failure, _):
      // Stopped: each offer cut short is reported once, whole (``ReceiverEvent/interrupted``),
      // not file by file after its end.
      guard !isStopping else { return }
      emit(.resource(event))
    case .staleStagingRemoved:
      emit(.resource(event))
    case .offerRefused(let peer, _, let error):
      emit(.resource(event))
      approvals.ended(peer.fingerprint)
      partEnds.signal(peer.fingerprint)
      if gate?.claimRefusal(from: peer.fingerprint, whenOpen: refusalBeforeDecision) == true {
        finish(.refused(peer, error))
      }
    case .offerFinished(let transfer, let error):
      // Cancelled by stop(): reported then.
      guard transfers.remove(transfer) else { return }
      emit(.transferEnded(transfer, error: error))
      ended(transfer, error: error)
    }
  }

  /// `transfer` ended, with `error` (nil: every file settled): the budget counts what it
  /// settled, and under `--once` its end is the outcome — unless more of its batch is to come,
  /// or its sender lost its link and may come back within the resume grace.
  private func ended(_ transfer: IncomingTransfer, error: TransferError?) {
    let sender = transfer.peer.fingerprint
    let lost = error.map { RetryPolicy.isRetryable($0) } ?? false
    // A batch of more files than one offer carries goes on with its next offer. Only the
    // part's own transfer ends the part, or the batch (an offer a person approved apart, or
    // an old link's late end, does not). (A link really lost is also reported by the
    // session's state changes.)
    let end = approvals.partEnded(transfer, failed: error != nil)
    if end.wasThePart {
      if lost { approvals.linkLost(sender) } else if !end.more { approvals.ended(sender) }
    }
    defer { partEnds.signal(sender) }
    guard let gate else { return }
    if end.more {
      // --once: the outcome is the whole batch's; its sender offers the next part at once.
      guard case .wait(let generation) = gate.linkLost(transfer) else { return }
      let wait = max(configuration.resumeGrace, Self.nextPartWait)
      inBackground { [self, peer = transfer.peer] in
        try? await Task.sleep(for: wait)
        if gate.resumeExpired(generation: generation) { finish(.incompleteBatch(peer)) }
      }
      return
    }
    let outcome: ReceiveOutcome =
      error.map { .transferFailed(transfer.peer, $0) } ?? .received(transfer)
    // --once: a sender that lost its link may come back for the same files; its outcome
    // waits that long. A transfer whose sender came back already is not the outcome.
    let grace = configuration.resumeGrace
    guard lost, grace > .zero else {
      if gate.finished(transfer) { finish(outcome) }
      return
    }
    guard case .wait(let generation) = gate.linkLost(transfer) else { return }
    emit(.awaitingResume(transfer.peer, grace: grace))
    inBackground { [self] in
      try? await Task.sleep(for: grace)
      if gate.resumeExpired(generation: generation) { finish(outcome) }
    }
  }

  /// How long `--once` waits for the next part of a batch (its sender offers it as soon as
  /// the part before is answered; the receiver's decision is part of the wait).
  static let nextPartWait: Duration = .seconds(150)

  /// A Ferry link to `peer` ended: on purpose (a GOODBYE, a violation: nothing comes back),
  /// or lost (its sender may come back within the resume grace).
  func linkEnded(_ peer: PeerID, onPurpose: Bool) {
    if onPurpose {
      approvals.ended(peer.fingerprint)
    } else {
      approvals.linkLost(peer.fingerprint)
    }
    partEnds.signal(peer.fingerprint)
  }
}
