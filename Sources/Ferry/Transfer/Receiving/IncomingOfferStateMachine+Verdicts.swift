import Foundation

/// The accepted offer's verdicts: files landed (or folders made), concluded and acknowledged.
extension IncomingOfferStateMachine {
  /// File `index` landed (``IncomingOfferAction/land(_:digest:)``, or an empty folder's
  /// ``IncomingOfferAction/makeFolder(_:)``), in whatever order files land: stored; skipped
  /// under the skip policy (the sender hears "skipped" only when what is there is a file it
  /// placed itself — what it may know — and otherwise "stored", as for a file stored under
  /// another name, so that it cannot probe for names put there by anyone else); corrupt; or
  /// failed. An offer that stopped meanwhile reports it as it landed and ends after the last.
  mutating func landed(_ index: Int, _ landing: Landing, into actions: inout [Action]) {
    if case .stopping = state { return landedAfterStop(index, landing, into: &actions) }
    guard isReceiving, slots.indices.contains(index), slots[index].isLanding else { return }
    let verdict = Self.verdict(of: landing, for: slots[index], configuration)
    if verdict.removeStaged { actions.append(.removeStaged(slots[index].name)) }
    conclude(
      index, verdict.status, reason: verdict.reason, result: verdict.result,
      digest: verdict.digest, toPeer: verdict.toPeer, into: &actions)
  }

  /// A file that was landing when the offer stopped has landed: the application hears how
  /// (the sender, told the offer stopped, hears nothing more); after the last one, the offer
  /// ends.
  private mutating func landedAfterStop(
    _ index: Int, _ landing: Landing, into actions: inout [Action]
  ) {
    guard case .stopping(var stopping) = state, stopping.landing.contains(index),
      stopping.slots[index].isLanding
    else { return }
    let slot = stopping.slots[index]
    let verdict = Self.verdict(of: landing, for: slot, configuration)
    if verdict.removeStaged { actions.append(.removeStaged(slot.name)) }
    if slot.promised > 0 { actions.append(.release(slot.promised)) }
    stopping.slots[index].promised = 0
    stopping.slots[index].stage = .done
    stopping.landing.remove(index)
    actions.append(
      .conclude(
        Action.Conclusion(
          index: index, result: verdict.result, digest: verdict.digest, identical: false)))
    guard stopping.landing.isEmpty else {
      state = .stopping(stopping)
      return
    }
    state = .ended
    if !stopping.names.isEmpty { actions.append(.releaseNames(stopping.names)) }
    actions.append(.finish(error: stopping.error))
  }

  /// What a landing comes to: for the sender (`status`, or `toPeer`, with `reason`), for the
  /// application (`result`, `digest`), and whether the staged file goes.
  private static func verdict(
    of landing: Landing, for slot: FileSlot, _ configuration: Configuration
  ) -> (
    status: FileVerdict, toPeer: FileVerdict?, reason: String,
    result: Result<URL?, TransferError>, digest: FileDigest?, removeStaged: Bool
  ) {
    let path = slot.offered.path
    switch landing {
    case .corrupt:
      return (
        .corrupt, nil, "\(configuration.checksum.rawValue) digest mismatch",
        .failure(.resource(.integrityCheckFailed(path: path))), nil, true
      )
    case .failed(let reason):
      return (
        .failed, nil, notStored, .failure(.resource(.cannotWrite("\(path): \(reason)"))), nil,
        true
      )
    case .settled(.placed(let url), let digest):
      return (
        .stored, nil, "", .success(url), digest.map { FileDigest(configuration.checksum, $0) },
        false
      )
    case .settled(.skipped(let owned), let digest):
      return (
        .skipped, owned ? .skipped : .stored, "", .success(nil),
        digest.map { FileDigest(configuration.checksum, $0) }, false
      )
    case .settled(.failed(let error), _):
      return (.failed, nil, notStored, .failure(.resource(error)), nil, false)
    }
  }

  /// An empty folder's end: its digest must be of no bytes; created under the destination, or
  /// skipped when the application takes files unplaced.
  mutating func makeFolder(_ index: Int, digest: [UInt8]?, into actions: inout [Action]) {
    guard let options else { return }
    guard digest == nil || digest == configuration.emptyDigest else {
      return conclude(
        index, .corrupt, reason: "\(configuration.checksum.rawValue) digest mismatch",
        result: .failure(.resource(.integrityCheckFailed(path: offered[index].path))),
        into: &actions)
    }
    guard options.relocate else {
      return conclude(index, .skipped, reason: "", result: .success(nil), into: &actions)
    }
    update { $0.slots[index].stage = .landing }
    actions.append(.makeFolder(index))
  }

  /// Settles file `index`: its space goes back, the application hears of it (`status`,
  /// `result`), and the sender (`toPeer`, `status` unless given, with `reason`: words that name
  /// nothing of this machine's own files).
  mutating func conclude(
    _ index: Int, _ status: FileVerdict, reason: String,
    result: Result<URL?, TransferError>, digest: FileDigest? = nil, identical: Bool = false,
    toPeer: FileVerdict? = nil, into actions: inout [Action]
  ) {
    let pending = update { receiving -> Bool in
      guard receiving.slots[index].isPending else { return false }
      if receiving.slots[index].promised > 0 {
        actions.append(.release(receiving.slots[index].promised))
        receiving.slots[index].promised = 0
      }
      receiving.slots[index].stage = .done
      receiving.open.removeAll { $0 == index }
      receiving.remaining -= 1
      if case .failure(let error) = result, receiving.firstFailure == nil {
        receiving.firstFailure = error
      }
      return true
    }
    guard pending == true else { return }
    actions.append(
      .conclude(
        Action.Conclusion(index: index, result: result, digest: digest, identical: identical)))
    queueAck(index, toPeer ?? status, reason: reason, into: &actions)
  }

  /// Gathers a FILE_ACK: sent with the offer's end, after ``ackBatch`` more, or within 20 ms.
  mutating func queueAck(
    _ index: Int, _ status: FileVerdict, reason: String,
    into actions: inout [Action]
  ) {
    let atOnce = configuration.acknowledgesAtOnce
    guard
      let (next, remaining) = update({ receiving -> (AckGathering.Next, Int) in
        (receiving.acks.queued(atOnce: atOnce), receiving.remaining)
      })
    else { return }
    actions.append(.queueAck(index: index, status: status, reason: reason))
    if remaining == 0 {
      finish(error: nil, into: &actions)
    } else {
      switch next {
      case .flush: flushAcks(into: &actions)
      case .scheduleFlush: actions.append(.scheduleAckFlush)
      case .gather: break
      }
    }
  }

  /// Sends the FILE_ACKs gathered so far.
  mutating func flushAcks(into actions: inout [Action]) {
    update { receiving in
      guard receiving.acks.flush() else { return }
      actions.append(.flushAcks)
    }
  }

  /// The 20 ms of gathering FILE_ACKs passed.
  mutating func ackTimerFired(into actions: inout [Action]) {
    flushAcks(into: &actions)
  }
}
