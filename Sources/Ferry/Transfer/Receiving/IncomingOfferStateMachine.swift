import Foundation

/// Receiving one offer of files, as a pure value: its paths are checked, it is decided (at
/// once, or by the application), its staging names claimed (waiting a little for those another
/// offer of the same sender holds), what the destination already holds found out, its space
/// reserved; then each file's bytes and end are taken in the order the sender may send them,
/// held files compared, every file settled, placed and acknowledged, and the offer ends once
/// none is left — or early, for a decline, a refusal, a cancel, a lost link, a stall or a
/// protocol violation.
///
/// Protocol-neutral: a front end feeds it "these files are offered" (``start(_:)``), "bytes for
/// file N" (``data(_:bytes:hole:)``), "file N ends with digest D" (``fileEnded(_:digest:)``),
/// "the sender gave up" (``senderReset(reason:)``); what it answers — accept, acknowledge,
/// grant credit, reset — the front end says in its own protocol. The Ferry wire is the first
/// front end (``FerryOfferEndpoint``).
///
/// Like NIO's state machines: one `state`, each case carrying the data valid in it (one
/// ``FileSlot`` per file, no parallel collections); one `mutating func` per event, appending
/// the ``IncomingOfferAction``s to perform to the caller's buffer; no I/O, no clock (the time
/// comes with the events that need it), no locks. ``IncomingOffer`` performs the actions, on
/// the offer's executor, and feeds their results back. Unit-tested state × event
/// (IncomingOfferStateMachineTests) and driven by the state-machine fuzzer.
struct IncomingOfferStateMachine {
  typealias Action = IncomingOfferAction

  /// How an offer gets its answer.
  enum Reception: Sendable {
    /// Accepted into these options as soon as its paths are checked.
    case automatic(ReceiveOptions)
    /// Asked about (``IncomingOfferAction/ask``).
    case asking
  }

  /// What the application answered.
  enum Decision: Sendable {
    case accept(ReceiveOptions)
    case decline(String)
  }

  /// What the driver found on disk for a file (``IncomingOfferAction/survey(_:)``).
  struct FileFacts: Hashable, Sendable {
    /// Where the destination holds this sender's copy with the offered size and time, if it
    /// does.
    var heldCopy: RelativePath?
    /// Whether the name holds a regular file this sender placed.
    var placedBySender = false
    /// Bytes staged by an earlier attempt.
    var staged: UInt64 = 0
  }

  /// How a file's landing came out (``landed(_:_:into:)``).
  enum Landing: Sendable {
    /// Its size or bytes do not match what the sender announced: its staged file goes.
    case corrupt
    /// It could not be settled (a system call failed, `reason`): its staged file goes.
    case failed(String)
    /// Settled — complete, checked, closed — and then placed (or not) as `placement` says;
    /// `digest` is the digest of its bytes (nil for an empty folder).
    case settled(Placement, digest: [UInt8]?)
  }

  /// How a settled file's (or an empty folder's) placing came out.
  enum Placement: Sendable {
    /// It is at this URL (placed, handed over, or the folder created).
    case placed(URL)
    /// Left where it was: the skip policy found its name taken; `ownedBySender`: by a file
    /// this sender placed (only then is the sender told "skipped").
    case skipped(ownedBySender: Bool)
    /// It could not be placed.
    case failed(ResourceError)
  }

  /// What a front end configures.
  struct Configuration: Sendable {
    /// The sender (its fingerprint names its staged and placed files).
    let sender: PeerID
    /// The digest every file is checked with.
    let checksum: ChecksumAlgorithm
    /// Whether the sender speaks held files (protocol version 2 or later).
    let holdsFiles: Bool
    /// The most files whose bytes may arrive at once: the Ferry wire sends one at a time (a
    /// second one before the first ended is a violation).
    let openFiles: Int
    /// The files that may be held, when not every one may (a LocalSend sender's with a
    /// SHA-256: only those have a digest to compare); nil: every one.
    var holdable: Set<Int>? = nil
    /// How long the sender may make no progress.
    let stall: Duration
    /// The digest of no bytes: an empty folder's FILE_END carries it.
    let emptyDigest: [UInt8]
    /// Whether each verdict goes to the sender at once rather than gathered (a front end whose
    /// sender waits for each file's answer before its next request).
    var acknowledgesAtOnce = false
  }

  /// Where the offer is.
  enum State {
    /// Not started: its paths are not checked yet.
    case idle
    /// The application has the question.
    case deciding(Offer)
    /// Accepted by the application: its staging is being prepared (names claimed or waited
    /// for, the destination surveyed, space reserved).
    case staging(Staging)
    /// Accepted: files arrive.
    case receiving(Receiving)
    /// Stopped early while files were landing: nothing more is taken from the sender; each of
    /// them is reported as it lands, and the offer ends after the last.
    case stopping(Stopping)
    /// Over: nothing more happens.
    case ended
    /// Only while an event changes the state in place (no copy of the slots).
    case modifying
  }

  /// An offer whose paths are checked.
  struct Offer {
    var slots: [FileSlot]
  }

  /// An offer being prepared.
  struct Staging {
    var slots: [FileSlot]
    let options: ReceiveOptions
    /// Files whose staging name another offer holds, waited for.
    var waiting: Set<Int> = []
    /// Bytes reserved for the offer (promised to its files) once ``reserved(_:for:)`` said so.
    var needed: UInt64 = 0
  }

  /// An accepted offer.
  struct Receiving {
    var slots: [FileSlot]
    let options: ReceiveOptions
    /// Files not settled yet.
    var remaining: Int
    /// Files whose staged file is open (their bytes arrive), in the order they opened.
    var open: [Int] = []
    /// Held files whose copy is still to be hashed here, the next one last: in the order the
    /// sender hashes its files, so that each digest is compared as it comes.
    var toHash: [Int]
    /// The held file being hashed here, if one is: the sender's silence does not count
    /// meanwhile (this side's own work).
    var hashing: Int?
    /// The first file's failure: the offer's, if nothing else ends it.
    var firstFailure: TransferError?
    /// FILE_ACKs gathered and not sent.
    var acks = 0
    /// Credit earned by bytes written and not granted yet.
    var credit = 0
    /// When the sender last made progress — a file ended, or ``progressBytes`` of file data
    /// since the time before — or this side last finished hashing a held file.
    var lastHeard: ContinuousClock.Instant
    /// Bytes of file data since ``lastHeard``: a trickle never adds up to progress.
    var sinceHeard: UInt64 = 0
    /// What came for a file and waits for it to be opened, or for its space.
    var pendingData: Pending?
  }

  /// An accepted offer stopped while files were landing.
  struct Stopping {
    var slots: [FileSlot]
    /// Why it stopped: the offer's error once the last file landed.
    let error: TransferError
    /// The files still landing.
    var landing: Set<Int>
    /// The staging names of the files that were landing, given back at the end.
    let names: [String]
  }

  /// How long an offer waits for another offer of the same sender to let go of a staged file.
  static let claimWait: Duration = .seconds(5)
  /// The file data a sender must send for it to count as progress against the stall limit
  /// (64 KiB, about 8.7 kbit/s over a minute): a byte every 20 s is silence, not a transfer
  /// that goes on for weeks. A streamed file's bytes count as they come (its writer may be
  /// slow for good reason); every file that ends counts.
  static let progressBytes: UInt64 = 64 << 10
  /// How far ahead of a streamed file's data its space is reserved.
  static let streamStep: UInt64 = 64 << 20
  /// Credit is granted back per this many bytes written.
  static let creditStep = 1 << 20
  /// FILE_ACKs are sent in batches of this many at most.
  static let ackBatch = 256
  /// What the sender is told of a file that could not be stored: the receiving user sees why,
  /// the sender learns nothing of the files and folders already in the destination.
  static let notStored = "could not be stored (the receiving user is told why)"

  let offered: [TransferFile]
  let configuration: Configuration
  /// Where the offer is: changed only by the machine's own events (its extensions).
  var state = State.idle

  init(files: [TransferFile], configuration: Configuration) {
    self.offered = files
    self.configuration = configuration
  }

  /// The options the offer was accepted into, once it was.
  var options: ReceiveOptions? {
    switch state {
    case .staging(let staging): return staging.options
    case .receiving(let receiving): return receiving.options
    default: return nil
    }
  }

  /// The offer's slots, in whatever state holds them (none once it ended).
  var slots: [FileSlot] {
    switch state {
    case .deciding(let offer): return offer.slots
    case .staging(let staging): return staging.slots
    case .receiving(let receiving): return receiving.slots
    case .stopping(let stopping): return stopping.slots
    case .idle, .ended, .modifying: return []
    }
  }

  /// Whether the offer is over.
  var isEnded: Bool {
    if case .ended = state { return true }
    return false
  }

  /// Whether the offer is accepted and not over.
  var isReceiving: Bool {
    if case .receiving = state { return true }
    return false
  }

  // MARK: Deciding

  /// The offer arrived: its paths are checked on their bytes (``RelativePath``); an unsafe one
  /// refuses it whole before anyone is asked. Otherwise it is asked about or prepared.
  mutating func start(_ reception: Reception, into actions: inout [Action]) {
    guard case .idle = state else { return }
    var slots: [FileSlot] = []
    slots.reserveCapacity(offered.count)
    do throws(PathError) {
      var paths: [RelativePath] = []
      paths.reserveCapacity(offered.count)
      for file in offered { paths.append(try RelativePath(validating: file.path)) }
      try RelativePath.checkTree(paths)
      for (file, path) in zip(offered, paths) { slots.append(FileSlot(offered: file, path: path)) }
    } catch {
      state = .ended
      return refuse(.unsafePath(error), into: &actions)
    }
    switch reception {
    case .automatic(let options):
      prepare(slots, options, into: &actions)
    case .asking:
      state = .deciding(Offer(slots: slots))
      actions.append(.ask)
    }
  }

  /// The application answered.
  mutating func decided(_ decision: Decision, into actions: inout [Action]) {
    guard case .deciding(let offer) = state else { return }
    switch decision {
    case .accept(let options):
      prepare(offer.slots, options, into: &actions)
    case .decline(let reason):
      state = .ended
      actions.append(
        .reset(reason: reason.isEmpty ? "declined by the receiver" : reason, cause: .declined))
      actions.append(.closeChannel)
    }
  }

  /// Nobody answered in time: declined.
  mutating func decisionTimedOut(into actions: inout [Action]) {
    guard case .deciding = state else { return }
    actions.append(.withdrawQuestion)
    decided(.decline("no decision in time"), into: &actions)
  }

  private mutating func prepare(
    _ slots: [FileSlot], _ options: ReceiveOptions, into actions: inout [Action]
  ) {
    state = .staging(Staging(slots: slots, options: options))
    actions.append(.openStaging(options))
  }

  // MARK: Staging

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
        toHash: held.reversed(), lastHeard: now))
    if !metas.isEmpty { actions.append(.writeMeta(metas)) }
    actions.append(.scheduleStallCheck)
    actions.append(.reportAccepted(skipped: skipped))
    actions.append(.sendAccept(starts))
    hashNextHeld(into: &actions)
    if remaining == 0 { finish(error: nil, into: &actions) }
  }

  // MARK: Refusing and ending

  /// Refuses the offer before anything of it is written (an unsafe path, no room, an unsafe
  /// staging folder); gives back the names of `releasing` it claimed.
  private mutating func refuse(
    _ error: ResourceError, into actions: inout [Action], releasing slots: [FileSlot] = []
  ) {
    actions.append(.log("refused: \(error)"))
    actions.append(.withdrawQuestion)
    actions.append(
      .reset(reason: Self.peerReason(error, refusing: true), cause: .refused(error)))
    actions.append(.closeChannel)
    let claimed = slots.filter(\.claimed).map(\.name)
    if !claimed.isEmpty { actions.append(.releaseNames(claimed)) }
    actions.append(.cleanUp)
    actions.append(.reportRefused(error))
  }

  /// What the sender is told of `error`, which refused (`refusing`) or stopped the offer: its
  /// own paths (an unsafe path), the sizes (too many, too large, no room) and a corrupt file
  /// as they are; anything about the destination and its files only as a failure of the
  /// receiver, the detail staying with the receiving user.
  static func peerReason(_ error: ResourceError, refusing: Bool) -> String {
    switch error {
    case .unsafePath, .insufficientSpace, .integrityCheckFailed, .tooManyFiles, .tooLarge:
      return error.description
    case .unsafeDestination, .cannotWrite, .cannotRead, .unsupportedByPeer, .streamInterrupted:
      return refusing
        ? "the receiver cannot store files where it receives them (its user is told why)"
        : "the receiver could not write the files (its user is told why)"
    }
  }
}
