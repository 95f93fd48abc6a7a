import Foundation

/// The accepted offer: each file's bytes and end, held files compared, verdicts.
extension IncomingOfferStateMachine {
  /// What came for a file and is not done with yet: it waits for the file's staging file to
  /// open (and, before that, for its space), or for room ahead of a streamed file.
  struct Pending: Sendable {
    let index: Int
    /// Bytes of data (0 for a hole), or of the hole.
    let count: UInt64
    let hole: Bool
    /// Credit the bytes earn once written (their frame's payload).
    let credit: Int
    /// Whether it is the file's end (no data then).
    var ends = false
    /// For an end: the digest it came with (nil: the sender gave none, and the bytes are taken
    /// as they came, their length checked).
    var digest: [UInt8]? = nil
  }

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
      // Progress is bytes, not frames: enough of them, or a streamed file's as they come.
      receiving.sinceHeard &+= count
      if slot.offered.isStreamed || receiving.sinceHeard >= Self.progressBytes {
        receiving.lastHeard = now
        receiving.sinceHeard = 0
      }
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
      receiving.lastHeard = now
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

  // MARK: Held files

  /// This side's digest of held file `index` (empty when it could not be read): compared at
  /// once when the sender's came first. The sender's silence counts from here again.
  mutating func heldHashed(
    _ index: Int, _ digest: [UInt8], now: ContinuousClock.Instant, into actions: inout [Action]
  ) {
    let both = update { receiving -> Bool in
      // A hash left by ``stopComparing(_:now:into:)`` restarts no clock, and the one run now is not
      // its to end.
      guard receiving.hashing == index else { return false }
      receiving.lastHeard = now
      receiving.hashing = nil
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
      guard receiving.hashing == nil else { return }
      while let index = receiving.toHash.popLast() {
        guard case .comparing(let comparison) = receiving.slots[index].stage,
          comparison.own == nil
        else { continue }
        receiving.hashing = index
        return actions.append(.hashHeld(index))
      }
    }
  }

  /// Both digests of held file `index` are known: the same content (its copy still this
  /// sender's, with the offered size and time) is identical and nothing is written; other
  /// content is skipped under the skip policy (or when received before), and otherwise asked
  /// for whole. Only the sender learns the outcome, never the destination's digest.
  private mutating func compare(_ index: Int, into actions: inout [Action]) {
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
        guard receiving.hashing == index else { return false }
        receiving.hashing = nil
        receiving.lastHeard = now
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

  // MARK: Landing

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
  private mutating func makeFolder(_ index: Int, digest: [UInt8]?, into actions: inout [Action]) {
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
  private mutating func conclude(
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
  private mutating func queueAck(
    _ index: Int, _ status: FileVerdict, reason: String,
    into actions: inout [Action]
  ) {
    guard
      let (acks, remaining) = update({ receiving -> (Int, Int) in
        receiving.acks += 1
        return (receiving.acks, receiving.remaining)
      })
    else { return }
    actions.append(.queueAck(index: index, status: status, reason: reason))
    if remaining == 0 {
      finish(error: nil, into: &actions)
    } else if configuration.acknowledgesAtOnce || acks >= Self.ackBatch {
      flushAcks(into: &actions)
    } else if acks == 1 {
      // The sender only waits for acks at its end; gather them for a moment.
      actions.append(.scheduleAckFlush)
    }
  }

  /// Sends the FILE_ACKs gathered so far.
  private mutating func flushAcks(into actions: inout [Action]) {
    update { receiving in
      guard receiving.acks > 0 else { return }
      receiving.acks = 0
      actions.append(.flushAcks)
    }
  }

  /// The 20 ms of gathering FILE_ACKs passed.
  mutating func ackTimerFired(into actions: inout [Action]) {
    flushAcks(into: &actions)
  }
}
