import Foundation

/// How an offer ends early — the sender gives up, its link closes, the application cancels, a
/// stall, a violation — or at its last file.
extension IncomingOfferStateMachine {
  /// The sender gave up (RESET) with `reason`.
  mutating func senderReset(reason: String, into actions: inout [Action]) {
    abandon(.cancelledByPeer(reason: reason), notify: false, into: &actions)
  }

  /// The offer's link closed (`reason`): the sender is gone.
  mutating func linkClosed(reason: String, into actions: inout [Action]) {
    abandon(.peerDisconnected(reason: reason), notify: false, into: &actions)
  }

  /// The application cancelled (the driver told the sender at once).
  mutating func cancelled(into actions: inout [Action]) {
    abandon(.cancelled, notify: false, into: &actions)
  }

  /// A quarter of the stall limit passed: a sender heard of nothing for the whole limit loses
  /// the offer; it would otherwise hold its reservation, its staged file and its descriptor for
  /// as long as it keeps the link alive. Only this side's own work stops the clock — hashing a
  /// held file, bounded by its size — never what the sender claims to be doing.
  mutating func stallCheck(now: ContinuousClock.Instant, into actions: inout [Action]) {
    guard case .receiving(let receiving) = state else { return }
    guard
      receiving.held.isHashing || !receiving.clock.stalled(now: now, limit: configuration.stall)
    else {
      return abandon(.stalled(configuration.stall), notify: true, into: &actions)
    }
    actions.append(.scheduleStallCheck)
  }

  /// Something other than a RESET (`what`) came before the offer was accepted: the sender's
  /// doing.
  mutating func early(_ what: String = "data", into actions: inout [Action]) {
    switch state {
    case .deciding, .staging:
      violation("the sender sent \(what) before the offer was accepted", into: &actions)
    default:
      break
    }
  }

  /// Ends the offer over something the protocol does not allow here: the sender's doing, which
  /// it is told exactly.
  mutating func violation(_ text: String, into actions: inout [Action]) {
    let error = ResourceError.cannotWrite(text)
    abandon(.resource(error), notify: true, saying: error.description, into: &actions)
  }

  /// Stops receiving: the files open keep their staged bytes (for a resume) — but a streamed
  /// one, which cannot resume, and a corrupt one — and nothing more is opened; every file not
  /// settled fails with `error`, but those already landing (complete, being settled and
  /// placed), which are reported as they land, the offer ending after the last. The sender is
  /// told unless it is the one who stopped: what it did wrong (`saying`), or why in words that
  /// name nothing of this machine's own files.
  mutating func abandon(
    _ error: TransferError, notify: Bool, saying: String? = nil, into actions: inout [Action]
  ) {
    let receiving: Receiving?
    let slots: [FileSlot]
    switch state {
    case .idle, .ended, .modifying, .stopping:
      return
    case .deciding(let offer):
      (receiving, slots) = (nil, offer.slots)
    case .staging(let staging):
      (receiving, slots) = (nil, staging.slots)
    case .receiving(let accepted):
      (receiving, slots) = (accepted, accepted.slots)
    }
    let landing = Set(slots.indices.filter { receiving != nil && slots[$0].isLanding })
    if let receiving, !landing.isEmpty {
      let names = landing.map { slots[$0] }.filter(\.claimed).map(\.name)
      state = .stopping(
        Stopping(slots: receiving.slots, error: error, landing: landing, names: names))
    } else {
      state = .ended
    }
    actions.append(.log("stopped: \(error)"))
    actions.append(.withdrawQuestion)
    var corrupt = false
    if case .resource(.integrityCheckFailed) = error { corrupt = true }
    for index in receiving?.open ?? [] {
      actions.append(.discard(index))
      // What no later offer can resume goes at once: a streamed file's, one staged under a
      // name of its own (a front end that cannot resume, as LocalSend's; the same file offered
      // twice at once) — and a corrupt one.
      if corrupt || slots[index].offered.isStreamed || slots[index].fresh {
        actions.append(.removeStaged(slots[index].name))
      }
    }
    for index in slots.indices
    where receiving != nil && slots[index].isPending && !landing.contains(index) {
      actions.append(
        .conclude(
          Action.Conclusion(index: index, result: .failure(error), digest: nil, identical: false)))
    }
    if notify {
      let reason: String
      if let saying {
        reason = saying
      } else if case .resource(let problem) = error {
        reason = Self.peerReason(problem, refusing: false)
      } else {
        reason = error.description
      }
      actions.append(.reset(reason: reason, cause: .stopped(error)))
    }
    giveBack(landing.isEmpty ? slots : slots.filter { !$0.isLanding }, into: &actions)
    if receiving == nil {
      actions.append(.closeChannel)
    } else if landing.isEmpty {
      actions.append(.finish(error: error))
    }
  }

  /// Ends the accepted offer: every file is settled (`error` nil) or it stopped.
  mutating func finish(error: TransferError?, into actions: inout [Action]) {
    guard case .receiving(let receiving) = state else { return }
    state = .ended
    giveBack(receiving.slots, into: &actions)
    actions.append(.finish(error: error ?? receiving.firstFailure))
  }

  /// Gives back what `slots` hold: the space still promised to them, and their staging names.
  private func giveBack(_ slots: [FileSlot], into actions: inout [Action]) {
    let promised = slots.reduce(UInt64(0)) { $0 + $1.promised }
    if promised > 0 { actions.append(.release(promised)) }
    let names = slots.filter(\.claimed).map(\.name)
    if !names.isEmpty { actions.append(.releaseNames(names)) }
  }
}
