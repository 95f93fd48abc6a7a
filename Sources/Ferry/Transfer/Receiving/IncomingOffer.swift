import CFerrySystem
import Dispatch
import Foundation
import NIOCore
import Synchronization

/// Receives one offer: the driver of an ``IncomingOfferStateMachine``. It feeds the machine
/// what its front end hands over (the offer, each file's bytes and end, the sender's reset, the
/// link's end), the application's answer and the time, and performs what the machine decides:
/// the disk (by its ``OfferDisk``), the application's events and progress, and the words for the
/// sender (``IncomingOfferFrontEnd``). It decides nothing itself.
///
/// All its state lives on `executor` (disk I/O never runs on an event loop); a front end's calls
/// arrive in order and are handled in order. Held files are hashed on ``DetachedWork`` (a few
/// at once in the process), beside the executor.
package final class IncomingOffer: @unchecked Sendable {
  typealias Machine = IncomingOfferStateMachine

  /// What the application's ``ResourceOffer`` and ``IncomingTransfer`` of this offer share.
  let id = OfferID.next()
  let peer: PeerID
  let offered: [TransferFile]
  let reception: OfferReception
  let events: AsyncStream<ResourceEvent>.Continuation
  let executor: any OfferExecutor
  let frontEnd: any IncomingOfferFrontEnd
  /// Whether a file's bytes staged by an earlier attempt are kept for this one (a front end
  /// whose protocol always sends whole files, and may send other content under the same name,
  /// stages every file afresh).
  let resumes: Bool
  /// The staging area, the staged files, hashing and landing (executor-confined, but for its
  /// hashing flags).
  let disk: OfferDisk
  /// What the front end delivered and the executor has not taken yet (any thread).
  private let inbox = Mutex<[Inbound]>([])

  // Executor-confined.
  var machine: Machine
  /// Events for the application not yielded yet: those of one turn of the executor go out
  /// together, so that its reader is woken once for them, not once per file.
  private var outbox: [ResourceEvent] = []
  /// Whether a turn that yields ``outbox`` at its end is running.
  private var inTurn = false
  /// The piece of data the event being handled brought.
  var piece: StagedFile.Piece?
  weak var question: ResourceOffer?
  var progress: TransferProgress?
  var transfer: IncomingTransfer?
  /// FILE_ACKs gathered and not sent yet.
  var acks: [FileAck] = []
  /// The destination's path, once known: never said to the sender.
  var destinationPath: String?
  /// The actions being performed (kept to reuse its storage).
  private var actions: [Machine.Action] = []

  package init(
    peer: PeerID, files: [TransferFile], checksum: ChecksumAlgorithm, reception: OfferReception,
    holdsFiles: Bool, holdable: Set<Int>? = nil, openFiles: Int = 1,
    acknowledgesAtOnce: Bool = false, resumes: Bool = true,
    events: AsyncStream<ResourceEvent>.Continuation, executor: any OfferExecutor,
    stall: Duration, frontEnd: any IncomingOfferFrontEnd
  ) {
    self.peer = peer
    self.offered = files
    self.reception = reception
    self.events = events
    self.executor = executor
    self.frontEnd = frontEnd
    self.resumes = resumes
    disk = OfferDisk(
      sender: peer.fingerprint, offered: files, checksum: checksum, resumes: resumes,
      executor: executor)
    machine = Machine(
      files: files,
      configuration: Machine.Configuration(
        sender: peer, checksum: checksum, holdsFiles: holdsFiles, openFiles: openFiles,
        holdable: holdable, stall: stall, emptyDigest: ContentHasher(checksum).finalize(),
        acknowledgesAtOnce: acknowledgesAtOnce))
  }

  // MARK: What a front end hands over (any thread)

  /// Starts handling the offer.
  package func start() {
    let kind: Machine.Reception
    switch reception {
    case .automatic(let options): kind = .automatic(options)
    case .asking: kind = .asking
    }
    handle { $0.start(kind, into: &$1) }
  }

  /// Bytes of file `index` (or a hole), earning `credit` once written.
  package func data(_ index: Int, _ piece: StagedFile.Piece, credit: Int) {
    deliver(.data(index, piece, credit: credit))
  }

  /// File `index` ends with `digest` (nil: the sender gave none; its length is checked).
  package func fileEnded(_ index: Int, digest: [UInt8]?) {
    deliver(.end(index, digest))
  }

  /// The front end stops waiting for the comparisons of held files `indices` (its sender's
  /// answer cannot wait longer): each not settled meanwhile is taken as different content —
  /// acknowledged `differs` and received whole (skipped under the skip policy).
  package func stopComparing(_ indices: Set<Int>) {
    handle { $0.stopComparing(indices, now: .now, into: &$1) }
  }

  /// The sender gave up.
  package func senderReset(reason: String) {
    deliver(.reset(reason))
  }

  /// The link is gone.
  package func linkClosed(reason: String) {
    deliver(.linkClosed(reason))
  }

  /// The sender broke the protocol (`text` says how).
  package func violation(_ text: String) {
    deliver(.violation(text))
  }

  /// What a front end hands over, in the order it came.
  enum Inbound: Sendable {
    case data(Int, StagedFile.Piece, credit: Int)
    case end(Int, [UInt8]?)
    case reset(String)
    case linkClosed(String)
    case violation(String)
  }

  /// Queues `inbound` for the executor: what comes while a turn of it is already queued joins
  /// that turn (a small file's CHUNK and FILE_END, and the files after it, cost one hop, not
  /// one each).
  private func deliver(_ inbound: Inbound) {
    let first = inbox.withLock { inbox -> Bool in
      inbox.append(inbound)
      return inbox.count == 1
    }
    if first { executor.run { self.drainInbox() } }
  }

  /// Hands what the front end delivered to the machine, in order. On the executor.
  private func drainInbox() {
    let items = inbox.withLock { inbox -> [Inbound] in
      defer { inbox.removeAll(keepingCapacity: true) }
      return inbox
    }
    asOneTurn {
      for item in items {
        switch item {
        case .data(let index, let piece, let credit):
          self.piece = piece
          let (count, hole): (UInt64, Bool)
          switch piece {
          case .bytes(let bytes): (count, hole) = (UInt64(bytes.readableBytes), false)
          case .hole(let length): (count, hole) = (length, true)
          }
          run { $0.data(index, count: count, hole: hole, credit: credit, now: .now, into: &$1) }
          self.piece = nil
        case .end(let index, let digest):
          run { $0.fileEnded(index, digest: digest, now: .now, into: &$1) }
        case .reset(let reason):
          run { $0.senderReset(reason: reason, into: &$1) }
        case .linkClosed(let reason):
          run { $0.linkClosed(reason: reason, into: &$1) }
        case .violation(let text):
          run { $0.violation(text, into: &$1) }
        }
      }
    }
  }

  /// The application cancelled (any thread): the sender is told at once; the offer's own
  /// cleanup (queued first, so that it is the cancel that ends the offer) follows.
  package func cancelFromApplication() {
    handle { $0.cancelled(into: &$1) }
    // Said as the sender's side says it: whose cancel it was.
    frontEnd.cancel(reason: "the receiver cancelled the transfer")
  }

  // MARK: Running the machine (on the executor)

  /// Runs `event` on the executor.
  func handle(_ event: @escaping @Sendable (inout Machine, inout [Machine.Action]) -> Void) {
    executor.run { self.run(event) }
  }

  /// Gives the machine `event`, then performs what it decides — results fed back as they come
  /// — until nothing is left to do. On the executor.
  func run(_ event: (inout Machine, inout [Machine.Action]) -> Void) {
    var actions = self.actions
    self.actions = []
    actions.removeAll(keepingCapacity: true)
    event(&machine, &actions)
    var next = 0
    while next < actions.count {
      let action = actions[next]
      next += 1
      perform(action, &actions)
    }
    self.actions = actions
    if !inTurn { yieldEvents() }
  }

  /// Runs `body` as one turn of the executor: the events it emits are yielded together at its
  /// end. On the executor.
  func asOneTurn(_ body: () -> Void) {
    let outer = inTurn
    inTurn = true
    body()
    inTurn = outer
    if !outer { yieldEvents() }
  }

  /// Queues `event` for the application, yielded at the end of the executor's turn. On the
  /// executor.
  func emit(_ event: ResourceEvent) {
    outbox.append(event)
  }

  /// Yields the events queued, in order. On the executor.
  func yieldEvents() {
    guard !outbox.isEmpty else { return }
    for event in outbox { events.yield(event) }
    outbox.removeAll(keepingCapacity: true)
  }

  /// Performs one action; any result goes back to the machine, whose actions join `actions`.
  private func perform(_ action: Machine.Action, _ actions: inout [Machine.Action]) {
    switch action {
    case .ask: ask()
    case .withdrawQuestion: question?.withdraw()
    case .reportAccepted(let skipped): reportAccepted(skipped: skipped)
    case .reportStarted(let index):
      guard let progress else { return }
      emit(.started(name: offered[index].path, peer: peer, progress: progress.file(index)))
    case .conclude(let conclusion): report(conclusion)
    case .reportRefused(let error): reportRefused(error)
    case .openStaging(let options): openStaging(options, &actions)
    case .waitForClaims(let busy): waitForClaims(busy)
    case .nameFresh(let indices):
      guard let names = disk.nameFresh(indices, slots: machine.slots) else { return }
      machine.namedFresh(names, into: &actions)
    case .survey(let questions):
      guard let facts = disk.survey(questions, slots: machine.slots) else { return }
      machine.surveyed(facts, into: &actions)
    case .reserve(let bytes, let purpose):
      let result: Result<Void, ResourceError>
      do throws(ResourceError) {
        try disk.reserve(bytes)
        result = .success(())
      } catch {
        result = .failure(error)
      }
      machine.reserved(result, for: purpose, now: .now, into: &actions)
    case .release(let bytes): disk.release(bytes)
    case .releaseNames(let names): disk.releaseNames(names)
    case .writeMeta(let indices): disk.writeMeta(indices, slots: machine.slots)
    case .hashHeld(let index): hashHeld(index)
    case .stopHashing(let index): disk.stopHashing(index)
    case .checkHeldCopy(let index):
      guard let there = disk.holdsHeldCopy(machine.slots[index]) else { return }
      machine.heldCopyChecked(index, stillThere: there, into: &actions)
    case .open(let index):
      guard let opened = disk.open(index, machine.slots[index]) else { return }
      machine.opened(index, opened, into: &actions)
    case .write(let index): write(index, &actions)
    case .land(let index, let digest): land(index, digest: digest, &actions)
    case .makeFolder(let index):
      let placement = disk.makeFolder(machine.slots[index], options: machine.options)
      machine.landed(index, .settled(placement, digest: nil), into: &actions)
    case .discard(let index): disk.discard(index)
    case .removeStaged(let name): disk.removeStaged(name)
    case .sendAccept(let starts): frontEnd.accept(starts)
    case .queueAck(let index, let status, let reason):
      acks.append(FileAck(index: index, status: status, reason: forPeer(reason)))
    case .flushAcks:
      let gathered = acks
      acks = []
      if !gathered.isEmpty { frontEnd.acknowledge(gathered) }
    case .scheduleAckFlush:
      executor.run(after: .milliseconds(20)) { [weak self] in
        self?.run { $0.ackTimerFired(into: &$1) }
      }
    case .grant(let bytes): frontEnd.grant(bytes)
    case .reset(let reason, let cause):
      frontEnd.reset(reason: forPeer(reason), cause: cause)
    case .closeChannel: frontEnd.close(after: [], then: {})
    case .scheduleStallCheck:
      executor.run(after: machine.configuration.stall / 4) { [weak self] in
        self?.run { $0.stallCheck(now: .now, into: &$1) }
      }
    case .finish(let error): finish(error)
    case .cleanUp: disk.cleanUp()
    case .log(let text):
      FerryLogging.logger.info(
        "offer of \(Quantity.count(offered.count, "file")) from \(peer.displayName): \(text)")
    }
  }
}
