import Foundation

/// The accepted offer's staging: names claimed (or waited for), the destination surveyed,
/// space reserved; then the offer is accepted.
extension IncomingOfferStateMachine {
  /// The staging area opened (or could not be: the offer is refused), with a staging name for
  /// each file — claimed, unless another offer holds it (`busy`: those are waited for, at most
  /// ``claimWait``, so that they resume rather than start over). `fresh`: files named afresh
  /// (streamed files).
  mutating func stagingOpened(
    _ result: Result<(names: [String], busy: Set<Int>, fresh: Set<Int>), ResourceError>,
    into actions: inout [Action]
  ) {
    guard case .staging(var staging) = state else { return }
    switch result {
    case .failure(let error):
      state = .ended
      refuse(error, into: &actions)
    case .success(let (names, busy, fresh)):
      state = .modifying
      for index in staging.slots.indices {
        staging.slots[index].name = names[index]
        staging.slots[index].claimed = !busy.contains(index)
        staging.slots[index].fresh = fresh.contains(index)
      }
      staging.waiting = busy
      state = .staging(staging)
      if busy.isEmpty {
        survey(into: &actions)
      } else {
        actions.append(.waitForClaims(busy))
      }
    }
  }

  /// Whether the offer still waits for file `index`'s staging name (another offer holds it).
  func waitsForClaim(_ index: Int) -> Bool {
    guard case .staging(let staging) = state else { return false }
    return staging.waiting.contains(index)
  }

  /// The offer that held file `index`'s staging name let go of it, and the driver claimed it
  /// for this one (only while ``waitsForClaim(_:)``); once none is left to wait for, the files
  /// are surveyed.
  mutating func claimed(_ index: Int, into actions: inout [Action]) {
    guard case .staging(var staging) = state, staging.waiting.contains(index) else { return }
    staging.waiting.remove(index)
    staging.slots[index].claimed = true
    state = .staging(staging)
    if staging.waiting.isEmpty { survey(into: &actions) }
  }

  /// Waited long enough: the files whose names are still held are staged afresh, under names
  /// of their own (the same file offered twice at once is staged twice).
  mutating func claimWaitOver(into actions: inout [Action]) {
    guard case .staging(let staging) = state, !staging.waiting.isEmpty else { return }
    actions.append(.nameFresh(staging.waiting.sorted()))
  }

  /// Files given fresh names (``IncomingOfferAction/nameFresh(_:)``), claimed.
  mutating func namedFresh(_ names: [Int: String], into actions: inout [Action]) {
    // (Named at once, by the driver: the offer still waits for them.)
    guard case .staging(var staging) = state, !staging.waiting.isEmpty else { return }
    state = .modifying
    for (index, name) in names where staging.waiting.contains(index) {
      staging.slots[index].name = name
      staging.slots[index].claimed = true
      staging.slots[index].fresh = true
      staging.waiting.remove(index)
    }
    state = .staging(staging)
    if staging.waiting.isEmpty { survey(into: &actions) }
  }

  /// Asks what the disk holds for each file that may be held, left out, or resumed; files
  /// received before under the same consent are left out at once (consent is spent once:
  /// never written again, nor held, since a held file may be sent whole).
  private mutating func survey(into actions: inout [Action]) {
    guard case .staging(var staging) = state else { return }
    let options = staging.options
    var questions: [Action.Survey] = []
    state = .modifying
    for index in staging.slots.indices {
      let file = staging.slots[index].offered
      if !options.receivedBefore.isEmpty, options.receivedBefore.contains(file.path) {
        staging.slots[index].plan = .skip
        continue
      }
      let held =
        configuration.holdsFiles && configuration.holdable.map { $0.contains(index) } != false
        && options.relocate && !file.isFolder && !file.isStreamed
      let placed = options.conflictPolicy == .skip && !file.isFolder
      questions.append(
        Action.Survey(
          index: index, held: held, renamed: options.conflictPolicy == .rename,
          placedBySender: placed, staged: !staging.slots[index].fresh && !file.isFolder))
    }
    state = .staging(staging)
    if questions.isEmpty {
      surveyed([:], into: &actions)
    } else {
      actions.append(.survey(questions))
    }
  }

  /// What the disk holds: each file's plan. The same content already there (size and time,
  /// then the digest) is held: neither sent nor written, whatever the conflict policy, which is
  /// for different content. Under the skip policy, a file left out before it is sent is only
  /// one this sender placed itself (what it may know of the destination): a name anyone else
  /// took is received and then dropped (``placed(_:_:)``), so that the answer never tells a
  /// sender which names are taken. Then the space still needed is reserved.
  mutating func surveyed(_ facts: [Int: FileFacts], into actions: inout [Action]) {
    guard case .staging(var staging) = state else { return }
    state = .modifying
    var needed: UInt64 = 0
    for index in staging.slots.indices where staging.slots[index].plan == .pending {
      let file = staging.slots[index].offered
      let found = facts[index] ?? FileFacts()
      if let copy = found.heldCopy {
        staging.slots[index].plan = .held(copy: copy)
      } else if found.placedBySender {
        staging.slots[index].plan = .skip
      } else {
        let offset = file.isStreamed || found.staged > file.size ? 0 : found.staged
        staging.slots[index].plan = .receive(offset: offset)
        staging.slots[index].promised = file.size - offset
        staging.slots[index].reserved = true
        needed += file.size - offset  // at most 2^62 in all: checked when decoded
      }
    }
    staging.needed = needed
    state = .staging(staging)
    actions.append(.reserve(needed, for: .offer))
  }

  /// A reservation came out: the offer's (it is accepted, or refused for want of room), a held
  /// file's asked for whole, or a streamed file's next step.
  mutating func reserved(
    _ result: Result<Void, ResourceError>, for purpose: Action.Reservation,
    now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    switch purpose {
    case .offer:
      // (Reserved at once, by the driver: the offer is still being staged.)
      guard case .staging(let staging) = state else { return }
      switch result {
      case .failure(let error):
        state = .ended
        refuse(error, into: &actions, releasing: staging.slots)
      case .success:
        accept(staging, now: now, into: &actions)
      }
    case .whole(let index), .stream(let index):
      reservedForFile(index, result, purpose, into: &actions)
    }
  }

  private mutating func accept(
    _ staging: Staging, now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    var slots = staging.slots
    var starts: [FileStart] = []
    starts.reserveCapacity(slots.count)
    var held: [Int] = []
    var skipped: [Int] = []
    var metas: [Int] = []
    for index in slots.indices {
      switch slots[index].plan {
      case .pending, .skip:
        starts.append(.skip)
        slots[index].stage = .done
        skipped.append(index)
      case .held:
        starts.append(.held)
        held.append(index)
        slots[index].stage = .comparing(FileSlot.Comparison())
      case .receive(let offset):
        starts.append(.from(offset))
        if slots[index].offered.size >= StagingArea.metadataThreshold { metas.append(index) }
      }
    }
    let remaining = slots.count - skipped.count
    state = .receiving(
      Receiving(
        slots: slots, options: staging.options, remaining: remaining,
        held: HeldComparisons(toHash: held.reversed()), clock: StallClock(lastHeard: now)))
    if !metas.isEmpty { actions.append(.writeMeta(metas)) }
    actions.append(.scheduleStallCheck)
    actions.append(.reportAccepted(skipped: skipped))
    actions.append(.sendAccept(starts))
    hashNextHeld(into: &actions)
    if remaining == 0 { finish(error: nil, into: &actions) }
  }
}
