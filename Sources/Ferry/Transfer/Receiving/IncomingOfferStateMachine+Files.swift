import Foundation

/// The accepted offer: each file's bytes and end.
extension IncomingOfferStateMachine {
  /// Changes the accepted offer in place — its slots are never copied: the state holds no
  /// reference to them meanwhile — and returns what `body` returns; nil (and nothing done)
  /// when the offer is not being received. `body` must not touch the machine.
  @discardableResult
  mutating func update<Result>(_ body: (inout Receiving) -> Result) -> Result? {
    guard case .receiving(var receiving) = state else { return nil }
    state = .modifying
    let result = body(&receiving)
    state = .receiving(receiving)
    return result
  }

  // MARK: Data

  /// `count` bytes of file `index` came (or, with `hole`, a hole of that many zeros), earning
  /// `credit` once written; the driver holds the bytes until ``IncomingOfferAction/write(_:)``.
  mutating func data(
    _ index: Int, count: UInt64, hole: Bool, credit: Int, now: ContinuousClock.Instant,
    into actions: inout [Action]
  ) {
    enum Verdict {
      case unexpected, uncompared, holeInStream
      case busy(Int)
      case proceed
    }
    let openFiles = configuration.openFiles
    let verdict = update { receiving -> Verdict in
      guard receiving.slots.indices.contains(index), receiving.slots[index].isPending,
        !receiving.slots[index].isLanding, !receiving.slots[index].offered.isFolder
      else { return .unexpected }
      let slot = receiving.slots[index]
      receiving.clock.heard(bytes: count, streamed: slot.offered.isStreamed, now: now)
      if slot.digestCame { return .uncompared }
      if slot.offered.isStreamed, hole { return .holeInStream }
      if slot.stage != .open, receiving.open.count >= openFiles {
        return .busy(receiving.open[0])
      }
      return .proceed
    }
    switch verdict {
    case nil: early(into: &actions)
    case .unexpected?: violation("data for file \(index), which is not expected", into: &actions)
    case .uncompared?: uncompared(index, into: &actions)
    case .holeInStream?: violation("a HOLE in streamed file \(index)", into: &actions)
    case .busy(let other)?:
      violation("data for file \(index) before file \(other) ended", into: &actions)
    case .proceed?:
      proceed(
        Pending(index: index, count: count, hole: hole, credit: credit),
        into: &actions)
    }
  }

  /// The file's end came, with the digest of all of it: a held file's digest first (compared
  /// with this side's own), an empty folder created, any other file settled — opened first when
  /// nothing of it came (empty, or wholly staged before).
  mutating func fileEnded(
    _ index: Int, digest: [UInt8]?, now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    enum Verdict {
      case ignore, compare, digestOnly, uncompared, folder, outOfOrder, proceed, undigested
    }
    let openFiles = configuration.openFiles
    let verdict = update { receiving -> Verdict in
      receiving.clock.heard(now: now)
      guard receiving.slots.indices.contains(index), receiving.slots[index].isPending,
        !receiving.slots[index].isLanding
      else { return .ignore }
      let slot = receiving.slots[index]
      if case .comparing(var comparison) = slot.stage, comparison.theirs == nil {
        // A held file's digest, sent first: nothing to compare without one.
        guard let digest else { return .undigested }
        comparison.theirs = digest
        receiving.slots[index].stage = .comparing(comparison)
        return comparison.own != nil ? .compare : .digestOnly
      }
      if slot.digestCame { return .uncompared }
      if slot.offered.isFolder { return .folder }
      if slot.stage != .open, receiving.open.count >= openFiles {
        return .outOfOrder
      }
      return .proceed
    }
    switch verdict {
    case nil: early(into: &actions)
    case .ignore?, .digestOnly?: break
    case .compare?: compare(index, into: &actions)
    case .uncompared?: uncompared(index, into: &actions)
    case .undigested?:
      violation("the end of held file \(index) without its digest", into: &actions)
    case .folder?: makeFolder(index, digest: digest, into: &actions)
    case .outOfOrder?: violation("FILE_END out of order", into: &actions)
    case .proceed?:
      proceed(
        Pending(index: index, count: 0, hole: false, credit: 0, ends: true, digest: digest),
        into: &actions)
    }
  }

  /// More for held file `index`, whose digest came and was not answered yet.
  private mutating func uncompared(_ index: Int, into actions: inout [Action]) {
    abandon(
      .resource(.cannotWrite("data for file \(index) before its digest was compared")),
      notify: true, into: &actions)
  }

  /// Takes `pending` as far as it goes: space for a held file sent whole, its staging file
  /// opened, room ahead of a streamed file, then the write — or the settling of its end.
  private mutating func proceed(_ pending: Pending, into actions: inout [Action]) {
    let next = update { receiving -> Action in
      let index = pending.index
      let slot = receiving.slots[index]
      receiving.pendingData = pending
      if slot.stage != .open {
        return slot.reserved ? .open(index) : .reserve(slot.offered.size, for: .whole(index))
      }
      if pending.ends {
        receiving.pendingData = nil
        receiving.open.removeAll { $0 == index }
        receiving.slots[index].stage = .landing
        return .land(index, digest: pending.digest)
      }
      if slot.offered.isStreamed, slot.position + pending.count > slot.reservedUpTo {
        return .reserve(Self.streamStep, for: .stream(index))
      }
      return .write(index)
    }
    if let next { actions.append(next) }
  }

  /// Space for a held file sent whole, or for the next step of a streamed file.
  mutating func reservedForFile(
    _ index: Int, _ result: Result<Void, ResourceError>, _ purpose: Action.Reservation,
    into actions: inout [Action]
  ) {
    if case .failure(let error) = result {
      return abandon(.resource(error), notify: true, into: &actions)
    }
    let pending = update { receiving -> Pending? in
      guard let pending = receiving.pendingData, pending.index == index else { return nil }
      if case .stream = purpose {
        receiving.slots[index].promised += Self.streamStep
        receiving.slots[index].reservedUpTo += Self.streamStep
      } else {
        receiving.slots[index].promised = receiving.slots[index].offered.size
        receiving.slots[index].reserved = true
      }
      return pending
    }
    if let pending = pending ?? nil { proceed(pending, into: &actions) }
  }

  /// File `index`'s staging file opened at `position` (its resume offset), or could not be.
  mutating func opened(
    _ index: Int, _ result: Result<UInt64, ResourceError>, into actions: inout [Action]
  ) {
    guard case .success(let position) = result else {
      if case .failure(let error) = result {
        abandon(.resource(error), notify: true, into: &actions)
      }
      return
    }
    let pending = update { receiving -> Pending? in
      guard let pending = receiving.pendingData, pending.index == index else { return nil }
      receiving.slots[index].stage = .open
      receiving.slots[index].position = position
      receiving.open.append(index)
      return pending
    }
    guard let pending = pending ?? nil else { return }
    actions.append(.reportStarted(index))
    proceed(pending, into: &actions)
  }

  /// The pending bytes of file `index` were written, or could not be. Written bytes are on
  /// disk, no longer a promise; their credit is handed back per MiB.
  mutating func wrote(
    _ index: Int, _ result: Result<Void, ResourceError>, into actions: inout [Action]
  ) {
    if case .failure(let error) = result {
      return abandon(.resource(error), notify: true, into: &actions)
    }
    update { receiving in
      guard let pending = receiving.pendingData, pending.index == index else { return }
      receiving.pendingData = nil
      receiving.slots[index].position += pending.count
      if !pending.hole, receiving.slots[index].promised > 0 {
        let used = min(receiving.slots[index].promised, pending.count)
        receiving.slots[index].promised -= used
        if used > 0 { actions.append(.release(used)) }
      }
      receiving.credit += pending.credit
      if receiving.credit >= Self.creditStep {
        actions.append(.grant(receiving.credit))
        receiving.credit = 0
      }
    }
  }
}
