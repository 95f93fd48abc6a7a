import Foundation

/// The accepted offer's held files: this side's digests, compared with the sender's.
extension IncomingOfferStateMachine {
  /// This side's digest of held file `index` (empty when it could not be read): compared at
  /// once when the sender's came first. The sender's silence counts from here again.
  mutating func heldHashed(
    _ index: Int, _ digest: [UInt8], now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    let both = update { receiving -> Bool in
      // A hash left by ``stopComparing(_:now:into:)`` restarts no clock, and the one run now is not
      // its to end.
      guard receiving.held.hashed(index) else { return false }
      receiving.clock.heard(now: now)
      guard receiving.slots.indices.contains(index),
        case .comparing(var comparison) = receiving.slots[index].stage
      else { return false }
      comparison.own = digest
      receiving.slots[index].stage = .comparing(comparison)
      return comparison.theirs != nil
    }
    if both == true { compare(index, into: &actions) }
    hashNextHeld(into: &actions)
  }

  /// Hashes the next held file that still waits for its comparison (one at a time, off the
  /// offer's order): a held file the sender chose to send whole instead is passed over.
  mutating func hashNextHeld(into actions: inout [Action]) {
    update { receiving in
      guard let index = receiving.held.next(in: receiving.slots) else { return }
      actions.append(.hashHeld(index))
    }
  }

  /// Both digests of held file `index` are known: the same content (its copy still this
  /// sender's, with the offered size and time) is identical and nothing is written; other
  /// content is skipped under the skip policy (or when received before), and otherwise asked
  /// for whole. Only the sender learns the outcome, never the destination's digest.
  mutating func compare(_ index: Int, into actions: inout [Action]) {
    guard case .comparing(let comparison) = slots[index].stage, let own = comparison.own,
      let theirs = comparison.theirs
    else { return }
    if own == theirs {
      actions.append(.checkHeldCopy(index))
    } else {
      differs(index, into: &actions)
    }
  }

  /// The front end stops waiting for the comparisons of held files `indices`: each still being
  /// compared is taken as different content (asked for whole, or skipped under the skip
  /// policy); one already settled is left as it is. A hash under way for one of them is left:
  /// this side's work no longer stops the stall clock, which counts from now; then the next
  /// held file still compared is hashed (once, after all of them are settled).
  mutating func stopComparing(
    _ indices: some Sequence<Int>, now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    for index in indices {
      guard isReceiving, slots.indices.contains(index), case .comparing = slots[index].stage
      else { continue }
      let left = update { receiving -> Bool in
        guard receiving.held.leave(index) else { return false }
        receiving.clock.heard(now: now)
        return true
      }
      if left == true { actions.append(.stopHashing(index)) }
      differs(index, into: &actions)
    }
    hashNextHeld(into: &actions)
  }

  /// Whether held file `index`'s copy is still what was compared (checked once the digests
  /// matched: it may have changed since it was hashed).
  mutating func heldCopyChecked(_ index: Int, stillThere: Bool, into actions: inout [Action]) {
    guard let destination = options?.destination, slots.indices.contains(index),
      case .comparing(let comparison) = slots[index].stage,
      case .held(let copy) = slots[index].plan, let digest = comparison.theirs
    else { return }
    guard stillThere else { return differs(index, into: &actions) }
    // A partial staged by an earlier attempt is of no use now.
    actions.append(.removeStaged(slots[index].name))
    conclude(
      index, .identical, reason: "",
      result: .success(destination.appending(path: copy.description)),
      digest: FileDigest(configuration.checksum, digest), identical: true, into: &actions)
    flushAcks(into: &actions)
  }

  private mutating func differs(_ index: Int, into actions: inout [Action]) {
    let skip = update { receiving -> Bool in
      let options = receiving.options
      let path = receiving.slots[index].offered.path
      guard options.conflictPolicy != .skip, !options.receivedBefore.contains(path) else {
        return true
      }
      receiving.slots[index].plan = .receive(offset: 0)
      receiving.slots[index].stage = .waiting
      return false
    }
    switch skip {
    case true?: conclude(index, .skipped, reason: "", result: .success(nil), into: &actions)
    case false?: queueAck(index, .differs, reason: "", into: &actions)
    case nil: return
    }
    flushAcks(into: &actions)
  }
}
