import CFerrySystem
import Dispatch
import FerryWire
import Foundation
import NIOCore
import Synchronization

/// Receives one offer — its protocol: validates its paths, gets it decided (at once, or by the
/// application), reserves its space, answers with resume offsets, then takes the sender's
/// frames in the order the protocol allows (CHUNKs of one file at a time, its FILE_END, RESET),
/// hands credit back and gathers FILE_ACKs. The disk side of each file is a ``StagedFile``;
/// placing it is the ``StagingArea``'s and its ``ConfinedDirectory``'s. All state lives on
/// `executor` (disk I/O never runs on the event loop); frames arrive from the loop in order and
/// are handled in order. Held files are hashed here on ``DetachedWork`` (a few at once in the
/// process), beside the executor.
final class IncomingOffer: @unchecked Sendable {
  /// Where the offer is in its life.
  private enum Phase: Equatable {
    /// Its paths are being checked.
    case checking
    /// Waiting for the application's answer.
    case deciding
    /// Accepted by the application; its staging files are being claimed (or waited for).
    case staging
    /// Accepted: files are arriving.
    case receiving
    /// Refused, declined, finished or abandoned; nothing more happens.
    case ended
  }

  private let channel: UInt32
  /// What the application's ``ResourceOffer`` and ``IncomingTransfer`` of this offer share.
  private let id = OfferID.next()
  private let peer: PeerID
  private let link: ConnectionLink
  private let offered: [OfferedFile]
  private let reception: OfferReception
  private let events: AsyncStream<ResourceEvent>.Continuation
  private let executor: any OfferExecutor
  private let hashQueue = DispatchQueue(label: "ferry.incoming-offer.digest")
  /// The digest every file of the offer is checked with (the sender's choice).
  private let checksum: ChecksumAlgorithm

  // Executor-confined.
  private var phase = Phase.checking
  private weak var question: ResourceOffer?
  private var options: ReceiveOptions?
  private var paths: [RelativePath] = []
  private var staging: StagingArea?
  private var names: [String] = []
  private var offsets: [UInt64] = []
  /// Bytes still promised (reserved) for each file not yet finished: what it still needs (it
  /// shrinks as bytes are written), or for a streamed file what is reserved ahead of them.
  private var promised: [Int: UInt64] = [:]
  /// Files the destination holds with the offered size and time: the sender sends such a file's
  /// digest first, and the file itself (its space reserved then) only if the content differs.
  private var held: Set<Int> = []
  /// Where each held file's copy is: its own path, or the name the `rename` policy gave it when
  /// its own was taken (``ConfinedDirectory/heldFile(at:matching:from:renamed:)``).
  private var heldAt: [Int: RelativePath] = [:]
  /// Held files whose digest-first FILE_END came.
  private var heldAnswered: Set<Int> = []
  /// Held files still to hash here, the next one last: this side hashes its own copies while
  /// the sender hashes its files, in the same order, so that each digest is compared as it comes.
  private var heldToHash: [Int] = []
  /// Whether a held file of this offer is being hashed here (or waits for its turn to be).
  private var hashingHeld = false
  /// This side's digests of held files whose digest has not come from the sender yet (empty for
  /// a file that could not be read or changed: it differs).
  private var ownDigests: [Int: [UInt8]] = [:]
  /// The sender's digests of held files that came before this side's own.
  private var awaitingOwn: [Int: [UInt8]] = [:]
  /// Set when the offer ends: the held file being hashed is left (any thread).
  private let hashingStopped = Atomic<Bool>(false)
  /// Files whose staging name another offer still holds, while this one waits for it.
  private var waitingForClaims: Set<Int>?
  /// Files staged under a name of their own, from nothing (their usual name stayed held).
  private var fresh: Set<Int> = []
  /// Files whose staging name this offer holds: the only ones it may release.
  private var claimed: Set<Int> = []
  private var transfer: IncomingTransfer?
  private var progress: TransferProgress?
  /// The file being received.
  private var current: StagedFile?
  /// Where the space reserved for the streamed file being received ends.
  private var streamReserved: UInt64 = 0
  private var remaining = Set<Int>()
  private var firstFailure: TransferError?
  private var pendingCredit = 0
  private var pendingAcks: [Frame] = []
  /// When the sender last sent something for this offer (while receiving), or this side last
  /// finished hashing one of its held files.
  private var lastHeard = ContinuousClock.now
  private let stall: Duration
  /// Whether the sender speaks held files (protocol version 2 or later).
  private let holdsFiles: Bool

  init(
    channel: UInt32, peer: PeerID, link: ConnectionLink, files: [OfferedFile],
    checksum: ChecksumAlgorithm = .sha256, reception: OfferReception, holdsFiles: Bool = true,
    events: AsyncStream<ResourceEvent>.Continuation,
    executor: any OfferExecutor = DispatchQueue(label: "ferry.incoming-offer"),
    stall: Duration = ConnectionTimeouts().transferStall
  ) {
    self.holdsFiles = holdsFiles
    self.checksum = checksum
    self.stall = stall
    self.channel = channel
    self.peer = peer
    self.link = link
    self.offered = files
    self.reception = reception
    self.events = events
    self.executor = executor
  }

  /// Starts handling (from the loop).
  func start() {
    executor.run { self.check() }
  }

  /// A frame for this offer, or the end of its link (from the loop).
  func receive(_ signal: OfferSignal) {
    switch signal {
    case .frame(let received):
      // A small payload is a slice of the decoder's (much larger) buffer; holding it while the
      // disk catches up would pin that whole buffer. Copy small ones out.
      var frame = received
      if frame.payload.readableBytes < 64 << 10 {
        frame.payload = ByteBuffer(bytes: frame.payload.readableBytesView)
      }
      let owned = frame
      executor.run { self.handle(owned) }
    case .linkClosed(let reason):
      executor.run { self.abandon(.peerDisconnected(reason: reason), notify: false) }
    }
  }

  /// The application cancelled (any thread). The RESET is queued on the loop at once, ahead of
  /// anything queued after this call (a GOODBYE when the application then closes its session),
  /// so that the sender hears of a cancel rather than of a vanished receiver; the multiplexer
  /// forgets the channel, dropping the chunks still on their way. The offer's own cleanup
  /// (queued first, so that it is the cancel that ends the offer) follows on its executor.
  func cancelFromApplication() {
    executor.run { self.abandon(.cancelled, notify: false) }
    // Said as the sender's side says it: whose cancel it was.
    let (channel, reason) = (self.channel, "the receiver cancelled the transfer")
    link.onMultiplexer {
      $0.reset(channel: channel, .cancelled, reason: reason, error: .cancelled)
    }
  }

  // MARK: Deciding

  private func check() {
    do throws(PathError) {
      paths = []
      paths.reserveCapacity(offered.count)
      for file in offered { paths.append(try RelativePath(validating: file.path)) }
      try RelativePath.checkTree(paths)
    } catch {
      // Never asked about: its question closes here.
      if case .asking(let question, _) = reception { question.close() }
      return refuse(.unsafePath(error))
    }
    switch reception {
    case .automatic(let options):
      prepare(options)
    case .asking(let open, let deliver):
      phase = .deciding
      let question = ResourceOffer(
        id: id, peer: peer, files: offered.map { ($0.path, $0.size) },
        folders: Set(offered.filter(\.isFolder).map(\.path)),
        streamed: Set(offered.filter(\.isStreamed).map(\.path)), question: open
      ) {
        [weak self] decision in
        guard let self else { return }
        self.executor.run { self.decided(decision) }
      }
      self.question = question
      deliver(question)
      executor.run(after: ResourceOffer.decisionTimeout) { [weak self] in
        guard let self, case .deciding = self.phase else { return }
        self.question?.withdraw()
        self.decline("no decision in time")
      }
    }
  }

  private func decided(_ decision: ResourceOffer.Decision) {
    guard case .deciding = phase else { return }
    switch decision {
    case .accept(let options): prepare(options)
    case .decline(let reason): decline(reason)
    }
  }

  private func decline(_ reason: String) {
    phase = .ended
    releaseAll()
    let channel = self.channel
    let text = reason.isEmpty ? "declined by the receiver" : reason
    link.onMultiplexer {
      $0.answerOffer(TransferMessage.reset(channel: channel, .refused, reason: text).frame)
      $0.closeOffer(channel: channel)
    }
  }

  /// Opens the staging area and claims a staging file per file; names another offer of this
  /// same sender still holds (typically the offer of a link this one replaces, still draining
  /// what it received) are waited for, at most ``claimWait``, so that those files resume rather
  /// than start over. Then ``stage()``.
  private func prepare(_ options: ReceiveOptions) {
    phase = .staging
    self.options = options
    let staging: StagingArea
    do {
      staging = try StagingArea(destination: options.destination)
    } catch {
      return refuse(error)
    }
    self.staging = staging
    let stale = staging.removeStale(olderThan: options.staleAfter)
    if stale.files > 0 {
      FerryLogging.logger.info(
        "removed \(Quantity.count(stale.files, "stale partial file")), \(Quantity.bytes(stale.bytes)), from the staging folder"
      )
      events.yield(
        .staleStagingRemoved(
          files: stale.files, bytes: stale.bytes, destination: options.destination))
    }
    var busy: Set<Int> = []
    for (index, file) in offered.enumerated() {
      let name = staging.name(for: file, from: peer.fingerprint)
      // A streamed file never resumes: it is staged under a name of its own, from nothing.
      if file.isStreamed {
        names.append(staging.streamName(like: name))
        claimed.insert(index)
        fresh.insert(index)
        continue
      }
      names.append(name)
      // One writer per staged file.
      if staging.claim(name) { claimed.insert(index) } else { busy.insert(index) }
    }
    guard !busy.isEmpty else { return stage() }
    waitingForClaims = busy
    for index in busy {
      staging.whenReleased(names[index]) { [weak self] in
        guard let self else { return }
        self.executor.run { self.claimReleased(index) }
      }
    }
    executor.run(after: Self.claimWait) { [weak self] in self?.stopWaitingForClaims() }
  }

  /// How long an offer waits for another offer of the same sender to let go of a staged file.
  static let claimWait: Duration = .seconds(5)

  /// The offer holding file `index`'s staging name let it go: claim it, and go on once none
  /// is left to wait for.
  private func claimReleased(_ index: Int) {
    guard phase != .ended, var waiting = waitingForClaims, waiting.contains(index),
      let staging, staging.claim(names[index])
    else { return }
    claimed.insert(index)
    waiting.remove(index)
    waitingForClaims = waiting
    if waiting.isEmpty {
      waitingForClaims = nil
      stage()
    }
  }

  /// Waited long enough: files whose name is still held are staged afresh, under names of
  /// their own (the same file offered twice at once is staged twice).
  private func stopWaitingForClaims() {
    guard phase != .ended, let waiting = waitingForClaims, let staging else { return }
    waitingForClaims = nil
    for index in waiting {
      names[index] = staging.uniqueName(like: names[index])
      claimed.insert(index)
      fresh.insert(index)
    }
    stage()
  }

  /// With every staging name claimed: works out each file's resume offset (or held, or skip),
  /// reserves the space still needed and accepts.
  private func stage() {
    guard phase != .ended, let staging, let options else { return }
    do throws(ResourceError) {
      var needed: UInt64 = 0
      for (index, file) in offered.enumerated() {
        let name = names[index]
        // Consent is spent once: a file received before under it is never written again, and
        // never held either (a held file may be sent whole).
        if receivedBefore(index, options) {
          offsets.append(ResourceMessage.skip)
          continue
        }
        // The same content already there (size and time first, then the digest) is neither
        // sent nor written, whatever the conflict policy: that is for different content. Under
        // the rename policy, "there" is also the name its copy got when its own was taken.
        if holdsFiles, options.relocate, !file.isFolder, !file.isStreamed,
          let copy = staging.destination.heldFile(
            at: paths[index], matching: file, from: peer.fingerprint.bytes,
            renamed: options.conflictPolicy == .rename)
        {
          held.insert(index)
          heldAt[index] = copy
          offsets.append(0)
          continue
        }
        // Under the skip policy, a file left out before it is sent is only one this sender
        // placed itself (what it may know of the destination): a name anyone else took is
        // received and then dropped (``place(_:from:options:digest:)``), so that the answer
        // never tells a sender which names are taken.
        if options.conflictPolicy == .skip, !file.isFolder,
          staging.destination.holdsFile(at: paths[index], from: peer.fingerprint.bytes)
        {
          offsets.append(ResourceMessage.skip)
          continue
        }
        let length = fresh.contains(index) ? 0 : staging.stagedLength(name)
        let offset = length <= file.size ? length : 0
        offsets.append(offset)
        promised[index] = file.size - offset
        needed += file.size - offset  // at most 2^62 in all: checked when decoded
      }
      do {
        try reserve(needed, on: staging)
      } catch {
        promised = [:]
        throw error
      }
      for (index, file) in offered.enumerated()
      where file.size >= StagingArea.metadataThreshold && offsets[index] != ResourceMessage.skip
        && !held.contains(index)
      {
        staging.writeMeta(names[index], file: file, sender: peer.fingerprint)
      }
    } catch {
      return refuse(error)
    }
    accept()
  }

  /// Reserves `bytes` of the staging area's filesystem (free space less what other offers were
  /// promised).
  ///
  /// - Throws: ``ResourceError/insufficientSpace(needed:available:)`` when they do not fit;
  ///   ``ResourceError/cannotWrite(_:)`` when the free space cannot be read.
  private func reserve(_ bytes: UInt64, on staging: StagingArea) throws(ResourceError) {
    var space = statvfs()
    guard fstatvfs(staging.fd, &space) == 0 else {
      throw .cannotWrite("\(staging.destination.root.path): \(errnoText())")
    }
    let (free, overflow) = UInt64(space.f_bavail).multipliedReportingOverflow(
      by: UInt64(space.f_frsize))
    let available = overflow ? UInt64.max : free
    guard SpaceReservations.shared.reserve(bytes, on: staging.device, available: available) else {
      let left = available - min(available, SpaceReservations.shared.promised(on: staging.device))
      throw .insufficientSpace(needed: Int64(clamping: bytes), available: Int64(clamping: left))
    }
  }

  private func accept() {
    phase = .receiving
    lastHeard = .now
    watchForStall()
    let progress = TransferProgress(
      files: offered.map { ($0.path, $0.size) }, streamed: offered.map(\.isStreamed))
    self.progress = progress
    let transfer = IncomingTransfer(
      id: id, peer: peer, files: offered.map { ($0.path, $0.size) },
      folders: offered.count { $0.isFolder },
      streamed: Set(offered.filter(\.isStreamed).map(\.path)), progress: progress
    ) { [weak self] in
      self?.cancelFromApplication()
    }
    progress.overall.cancellationHandler = { [weak self] in
      self?.cancelFromApplication()
    }
    self.transfer = transfer
    for (index, offset) in offsets.enumerated() {
      if offset == ResourceMessage.skip {
        progress.complete(index)
        events.yield(
          .finished(name: offered[index].path, peer: peer, result: .success(nil), digest: nil))
      } else {
        remaining.insert(index)
        progress.advance(index, to: offset, uncrossed: offset)
      }
    }
    events.yield(.offerReceived(transfer))
    let accept = ResourceMessage.offerAccept(
      channel: channel, offsets: offsets,
      held: held.sorted().map { UInt32($0) }
    ).frame
    link.onMultiplexer { $0.answerOffer(accept) }
    heldToHash = held.sorted(by: >)
    hashNextHeld()
    if remaining.isEmpty { finishOffer(error: nil) }
  }

  /// Abandons the offer when the sender sends nothing for ``ConnectionTimeouts/transferStall``
  /// while files are still expected: it would otherwise hold its reservation, its staged file
  /// and its descriptor for as long as it keeps the link alive. Only this side's own work stops
  /// the clock — hashing the offer's held files (``hashNextHeld()``), bounded by their size —
  /// never what the sender claims to be doing: it hashes the same files meanwhile.
  private func watchForStall() {
    executor.run(after: stall / 4) { [weak self] in
      guard let self, self.phase == .receiving else { return }
      guard self.hashingHeld || ContinuousClock.now - self.lastHeard < self.stall else {
        return self.abandon(.stalled(self.stall), notify: true)
      }
      self.watchForStall()
    }
  }

  /// Hashes the next held file that still waits for its comparison, off this executor
  /// (``OfferExecutor/runDetached(_:)``): the offer's frames and timers never wait for it. A
  /// held file the sender chose to send whole instead is passed over.
  private func hashNextHeld() {
    hashingHeld = false
    guard phase == .receiving, let staging else { return }
    while let index = heldToHash.popLast() {
      guard remaining.contains(index), promised[index] == nil else { continue }
      hashingHeld = true
      let (destination, path, file) = (
        staging.destination, heldAt[index] ?? paths[index], offered[index]
      )
      let checksum = self.checksum
      executor.runDetached { [weak self] in
        guard let self else { return }
        let digest = destination.digest(
          ofFileAt: path, matching: file, checksum: checksum,
          while: { !self.hashingStopped.load(ordering: .relaxed) })
        self.executor.run { self.heldHashed(index, digest ?? []) }
      }
      return
    }
  }

  /// This side's digest of held file `index` (empty when it could not be read): compared at once
  /// when the sender's came first. The sender's silence counts from here again.
  private func heldHashed(_ index: Int, _ digest: [UInt8]) {
    guard phase == .receiving else { return }
    lastHeard = .now
    if let theirs = awaitingOwn.removeValue(forKey: index) {
      answerHeld(index, theirs: theirs, there: digest)
    } else if remaining.contains(index) {
      ownDigests[index] = digest
    }
    hashNextHeld()
  }

  // MARK: Receiving

  private func handle(_ frame: WireFrame) {
    switch phase {
    case .ended:
      return
    case .checking, .deciding, .staging:
      // Only a RESET (the sender gives up) may come before the answer.
      guard frame.type == .reset else {
        return violation("the sender sent \(frame.type) before the offer was accepted")
      }
    case .receiving:
      lastHeard = .now
    }
    switch frame.type {
    case .chunk:
      var payload = frame.payload
      guard let index = payload.readInteger(as: UInt32.self).map(Int.init) else { return }
      write(.bytes(payload), file: index, credit: frame.payload.readableBytes)
    case .hole:
      guard case .hole(_, let file, let length)? = try? ResourceMessage(frame: frame.flat) else {
        return violation("malformed HOLE")
      }
      write(.hole(length), file: Int(file), credit: frame.payload.readableBytes)
    case .fileEnd:
      guard case .fileEnd(_, let file, let digest)? = try? ResourceMessage(frame: frame.flat) else {
        return violation("malformed FILE_END")
      }
      finishFile(Int(file), digest: digest)
    case .reset:
      let reason = (try? TransferMessage(frame: frame.flat)).flatMap { message -> String? in
        if case .reset(_, _, let reason) = message { return reason }
        return nil
      }
      abandon(.cancelledByPeer(reason: reason ?? ""), notify: false)
    default:
      break
    }
  }

  private func write(_ piece: StagedFile.Piece, file index: Int, credit: Int) {
    guard remaining.contains(index), !offered[index].isFolder else {
      return violation("data for file \(index), which is not expected")
    }
    if current?.index != index {
      if let current {
        return violation("data for file \(index) before file \(current.index) ended")
      }
      guard begin(index) else { return }
    }
    guard let file = current else { return }
    if offered[index].isStreamed {
      guard case .bytes(let bytes) = piece else {
        return violation("a HOLE in streamed file \(index)")
      }
      guard roomForStream(index, upTo: file.position + UInt64(bytes.readableBytes)) else { return }
    }
    do {
      try file.write(piece)
    } catch {
      return abandon(.resource(error), notify: true)
    }
    var holes: UInt64 = 0
    switch piece {
    case .hole(let length): holes = length
    case .bytes(let bytes): consume(UInt64(bytes.readableBytes), of: index)
    }
    progress?.advance(index, to: file.position, uncrossed: holes)
    // Credit is handed back per MiB written, in one hop (the multiplexer batches further).
    pendingCredit += credit
    if pendingCredit >= 1 << 20 { flushCredit() }
  }

  /// Space for streamed file `index` up to `end`: reserved ``streamStep`` at a time, ahead of
  /// what is written (what is written stops being a promise as it lands: ``consume(_:of:)``);
  /// abandons the offer and returns false when the filesystem has no room left for it.
  private func roomForStream(_ index: Int, upTo end: UInt64) -> Bool {
    guard end > streamReserved, let staging else { return true }
    do {
      try reserve(Self.streamStep, on: staging)
    } catch {
      abandon(.resource(error), notify: true)
      return false
    }
    promised[index, default: 0] += Self.streamStep
    streamReserved += Self.streamStep
    return true
  }

  /// `bytes` of file `index` were written: they are on disk now, and what the free space counts,
  /// so its promise shrinks by as much (else they would count twice against the space left,
  /// for as long as the file took).
  private func consume(_ bytes: UInt64, of index: Int) {
    guard let left = promised[index], left > 0, let staging else { return }
    let used = min(left, bytes)
    promised[index] = left - used
    SpaceReservations.shared.release(used, on: staging.device)
  }

  /// How far ahead of a streamed file's data its space is reserved.
  static let streamStep: UInt64 = 64 << 20

  private func flushCredit() {
    guard pendingCredit > 0 else { return }
    let (channel, credit) = (self.channel, pendingCredit)
    pendingCredit = 0
    link.onMultiplexer { $0.grant(credit, channel: channel) }
  }

  /// Sends the FILE_ACKs gathered so far, in one hop.
  private func flushAcks() {
    guard !pendingAcks.isEmpty else { return }
    let acks = pendingAcks
    pendingAcks = []
    link.onMultiplexer { $0.answerOffer(acks) }
  }

  /// Opens file `index`'s staging file at its offset (hashing what it already holds).
  private func begin(_ index: Int) -> Bool {
    guard let staging else { return false }
    guard awaitingOwn[index] == nil else {
      abandon(
        .resource(.cannotWrite("data for file \(index) before its digest was compared")),
        notify: true)
      return false
    }
    do {
      if held.contains(index), promised[index] == nil {
        // A held file whose content differs after all: it is sent whole, and needs its room.
        try reserve(offered[index].size, on: staging)
        promised[index] = offered[index].size
      }
      current = try StagedFile(
        names[index], in: staging, index: index, offered: offered[index],
        offset: offsets[index], checksum: checksum, hashingOn: hashQueue)
      streamReserved = 0
      events.yield(.started(name: offered[index].path, peer: peer, progress: progress!.file(index)))
      return true
    } catch {
      abandon(.resource(error), notify: true)
      return false
    }
  }

  private func finishFile(_ index: Int, digest: [UInt8]) {
    guard remaining.contains(index) else { return }
    if held.contains(index), !heldAnswered.contains(index), current?.index != index {
      return compareHeld(index, digest)
    }
    if offered[index].isFolder, current == nil {
      return makeFolder(index, digest: digest)
    }
    if current == nil {
      guard begin(index) else { return }  // nothing sent: empty, or wholly staged before
    }
    guard let file = current, file.index == index, let staging, let options else {
      return violation("FILE_END out of order")
    }
    current = nil
    remaining.remove(index)
    let path = file.offered.path
    switch file.settle(digest: digest, sender: peer.fingerprint.bytes) {
    case .corrupt:
      staging.remove(names[index])
      conclude(
        index, .corrupt, reason: "\(checksum.rawValue) digest mismatch",
        result: .failure(.resource(.integrityCheckFailed(path: path))))
    case .failed(let reason):
      staging.remove(names[index])
      conclude(
        index, .failed, reason: Self.notStored,
        result: .failure(.resource(.cannotWrite("\(path): \(reason)"))))
    case .settled:
      place(index, from: staging, options: options, digest: FileDigest(checksum, digest))
    }
  }

  /// Creates empty folder `index` (its FILE_END carries the digest of no bytes): under the
  /// destination, or nowhere when the application takes files unplaced (it is then skipped).
  private func makeFolder(_ index: Int, digest: [UInt8]) {
    guard let staging, let options else { return }
    remaining.remove(index)
    guard digest == ContentHasher(checksum).finalize() else {
      return conclude(
        index, .corrupt, reason: "\(checksum.rawValue) digest mismatch",
        result: .failure(.resource(.integrityCheckFailed(path: offered[index].path))))
    }
    guard options.relocate else {
      return conclude(index, .skipped, reason: "", result: .success(nil))
    }
    if options.conflictPolicy == .skip, staging.destination.exists(paths[index]) {
      return skipped(index, digest: nil)
    }
    do throws(ResourceError) {
      let url = try staging.destination.makeFolder(at: paths[index], mode: offered[index].mode)
      conclude(index, .stored, reason: "", result: .success(url))
    } catch {
      // A file or a link where a folder goes: under the skip policy, a name taken.
      if options.conflictPolicy == .skip, case .unsafeDestination = error {
        return skipped(index, digest: nil)
      }
      conclude(index, .failed, reason: Self.notStored, result: .failure(.resource(error)))
    }
  }

  /// The sender's digest of held file `index` (sent before, and instead of, its bytes): compared
  /// now if this side has hashed its own copy, or as soon as it has (``heldHashed(_:_:)``).
  private func compareHeld(_ index: Int, _ digest: [UInt8]) {
    heldAnswered.insert(index)
    guard let there = ownDigests.removeValue(forKey: index) else {
      awaitingOwn[index] = digest
      return
    }
    answerHeld(index, theirs: digest, there: there)
  }

  /// The sender's digest of held file `index` (`theirs`) against this side's digest of what the
  /// destination holds (`there`): the same content is ``ResourceMessage/FileStatus/identical``
  /// and nothing is written; other content is skipped under the skip policy, and otherwise
  /// asked for whole (``ResourceMessage/FileStatus/differs``). Only the sender learns the
  /// outcome, never the destination's digest.
  private func answerHeld(_ index: Int, theirs digest: [UInt8], there: [UInt8]) {
    guard remaining.contains(index), let staging, let options else { return }
    // The sender may be waiting for this answer alone: it hears of it at once, not in 20 ms.
    defer { flushAcks() }
    // Hashed maybe well before the digest came: the file must still have the same size and time.
    let copy = heldAt[index] ?? paths[index]
    if there == digest,
      staging.destination.holdsFile(
        at: copy, matching: offered[index], from: peer.fingerprint.bytes)
    {
      remaining.remove(index)
      staging.remove(names[index])  // a partial staged by an earlier attempt, and its .meta
      return conclude(
        index, .identical, reason: "",
        result: .success(options.destination.appending(path: copy.description)),
        digest: FileDigest(checksum, digest))
    }
    if options.conflictPolicy == .skip || receivedBefore(index, options) {
      remaining.remove(index)
      return conclude(index, .skipped, reason: "", result: .success(nil))
    }
    queueAck(
      ResourceMessage.fileAck(channel: channel, file: UInt32(index), .differs, reason: "").frame)
  }

  /// Whether file `index` was received before under the same consent
  /// (``ReceiveOptions/receivedBefore``).
  private func receivedBefore(_ index: Int, _ options: ReceiveOptions) -> Bool {
    !options.receivedBefore.isEmpty && options.receivedBefore.contains(offered[index].path)
  }

  /// Moves settled file `index` where it belongs: under the destination (``ConfinedDirectory``,
  /// by descriptors only), or handed over in place when the options do not relocate.
  ///
  /// Under the skip policy, a file whose name is taken (or with a file or a link where one of
  /// its folders goes) is dropped here, after it was received: see ``skipped(_:digest:)``.
  private func place(
    _ index: Int, from staging: StagingArea, options: ReceiveOptions, digest: FileDigest
  ) {
    let skipping = options.conflictPolicy == .skip
    do throws(ResourceError) {
      guard options.relocate else {
        if skipping, staging.destination.exists(paths[index]) {
          staging.remove(names[index])
          return skipped(index, digest: digest)
        }
        let staged = try staging.handOver(names[index])
        return conclude(index, .stored, reason: "", result: .success(staged), digest: digest)
      }
      guard
        let placed = try staging.place(
          names[index], at: paths[index], policy: options.conflictPolicy)
      else {
        staging.remove(names[index])
        return skipped(index, digest: digest)
      }
      if offered[index].size >= StagingArea.metadataThreshold {
        staging.removeMeta(names[index])  // only large files have one
      }
      conclude(index, .stored, reason: "", result: .success(placed), digest: digest)
    } catch {
      staging.remove(names[index])
      if skipping, case .unsafeDestination = error { return skipped(index, digest: digest) }
      conclude(index, .failed, reason: Self.notStored, result: .failure(.resource(error)))
    }
  }

  /// Concludes file (or empty folder) `index` as skipped under the skip policy: something is
  /// at its name, or in the way of one of its folders. The sender hears `skipped` only when
  /// what is there is a file it placed itself — what it may know (docs/SECURITY.md); otherwise
  /// it hears `stored`, as for a file stored under another name (`rename`), so that it cannot
  /// probe for names put there by anyone else. The receiver's own events say skipped.
  private func skipped(_ index: Int, digest: FileDigest?) {
    let own =
      !offered[index].isFolder
      && staging?.destination.holdsFile(at: paths[index], from: peer.fingerprint.bytes) == true
    conclude(
      index, .skipped, reason: "", result: .success(nil), digest: digest,
      toPeer: own ? .skipped : .stored)
  }

  /// Reports file `index` finished: to the application (`status`, `result`), and to the
  /// sender (`toPeer`, `status` unless given, with `reason`: words that name nothing of this
  /// machine's own files).
  private func conclude(
    _ index: Int, _ status: ResourceMessage.FileStatus, reason: String,
    result: Result<URL?, TransferError>, digest: FileDigest? = nil,
    toPeer: ResourceMessage.FileStatus? = nil
  ) {
    release(file: index)
    let failed: Bool
    if case .failure = result { failed = true } else { failed = false }
    progress?.complete(index, failed: failed)
    if case .failure(let error) = result, firstFailure == nil { firstFailure = error }
    if status == .identical, case .success(let url?) = result, let digest {
      events.yield(.identical(name: offered[index].path, peer: peer, at: url, digest: digest))
    } else {
      events.yield(
        .finished(name: offered[index].path, peer: peer, result: result, digest: digest))
    }
    queueAck(
      ResourceMessage.fileAck(
        channel: channel, file: UInt32(index), toPeer ?? status, reason: forPeer(reason)
      ).frame)
  }

  /// Gathers a FILE_ACK: sent with the offer's end, after 256 more, or within 20 ms.
  private func queueAck(_ ack: Frame) {
    pendingAcks.append(ack)
    if remaining.isEmpty {
      finishOffer(error: nil)
    } else if pendingAcks.count >= 256 {
      flushAcks()
    } else if pendingAcks.count == 1 {
      // The sender only waits for acks at its end; gather them for a moment.
      executor.run(after: .milliseconds(20)) { self.flushAcks() }
    }
  }

  /// Refuses the offer before anything of it is written (unsafe paths, no room, an unsafe
  /// staging folder).
  private func refuse(_ error: ResourceError) {
    FerryLogging.logger.notice(
      "refused an offer of \(Quantity.count(offered.count, "file")) from \(peer.displayName): \(error)"
    )
    phase = .ended
    question?.withdraw()
    let channel = self.channel
    let reason = forPeer(Self.peerReason(error, refusing: true))
    link.onMultiplexer {
      $0.answerOffer(TransferMessage.reset(channel: channel, .refused, reason: reason).frame)
      $0.closeOffer(channel: channel)
    }
    releaseAll()
    staging?.removeIfEmpty()
    events.yield(.offerRefused(peer: peer, files: offered.count, error: .resource(error)))
  }

  /// Stops receiving: the file in progress keeps its staged bytes (for resume), nothing is
  /// placed; the peer is told unless it is the one who stopped — what it did wrong (`saying`),
  /// or why in words that name nothing of this machine's own files.
  private func abandon(_ error: TransferError, notify: Bool, saying: String? = nil) {
    guard phase != .ended else { return }
    FerryLogging.logger.info("stopped receiving from \(peer.displayName): \(error)")
    let wasReceiving = phase == .receiving
    phase = .ended
    question?.withdraw()
    if let file = current {
      file.discard()
      current = nil
      // A streamed file cannot resume: what it staged is of no use.
      var corrupt = false
      if case .resource(.integrityCheckFailed) = error { corrupt = true }
      if let staging, file.offered.isStreamed || corrupt {
        staging.remove(names[file.index])
      }
    }
    for index in remaining.sorted() {
      progress?.complete(index, failed: true)
      events.yield(
        .finished(name: offered[index].path, peer: peer, result: .failure(error), digest: nil))
    }
    remaining = []
    let channel = self.channel
    if notify {
      let code: TransferMessage.ResetCode = error == .cancelled ? .cancelled : .failed
      let reason: String
      if let saying {
        reason = saying
      } else if case .resource(let problem) = error {
        reason = forPeer(Self.peerReason(problem, refusing: false))
      } else {
        reason = forPeer(error.description)
      }
      link.onMultiplexer {
        $0.answerOffer(TransferMessage.reset(channel: channel, code, reason: reason).frame)
      }
    }
    if wasReceiving {
      finish(error: error)
    } else {
      link.onMultiplexer { $0.closeOffer(channel: channel) }
      releaseAll()
    }
  }

  private func finishOffer(error: TransferError?) {
    guard phase == .receiving else { return }
    phase = .ended
    finish(error: error)
  }

  /// Ends an accepted offer: flushes, releases what it held and reports it.
  private func finish(error: TransferError?) {
    hashingStopped.store(true, ordering: .relaxed)
    progress?.finish()
    var flushFailure: TransferError?
    if let staging, ferry_syncfs(staging.fd) != 0 {
      // The small files placed by this offer may not survive a crash: say so rather than
      // report them safely stored.
      flushFailure = .resource(
        .cannotWrite("flushing the received files to disk failed: \(errnoText())"))
    }
    releaseAll()
    staging?.removeIfEmpty()
    // The offer is reported finished once its last FILE_ACKs are written to the connection, so
    // that an application may exit on that event without cutting them off.
    let (channel, acks, events) = (self.channel, pendingAcks, self.events)
    pendingAcks = []
    let outcome = error ?? firstFailure ?? flushFailure
    let finished = transfer.map { ResourceEvent.offerFinished($0, error: outcome) }
    link.onMultiplexer(
      { multiplexer in
        if !acks.isEmpty { multiplexer.answerOffer(acks) }
        multiplexer.closeOffer(channel: channel)
      },
      then: { if let finished { events.yield(finished) } })
  }

  /// Gives up file `index`'s claim on free space (it is finished: its bytes are on disk, or
  /// will not be).
  private func release(file index: Int) {
    guard let bytes = promised.removeValue(forKey: index), let staging else { return }
    SpaceReservations.shared.release(bytes, on: staging.device)
  }

  /// Gives up every claim the offer holds: staging names and promised space.
  private func releaseAll() {
    guard let staging else { return }
    SpaceReservations.shared.release(promised.values.reduce(0, +), on: staging.device)
    promised = [:]
    // Only what this offer claimed: a name it was still waiting for is another offer's.
    staging.release(claimed.sorted().map { names[$0] })
    claimed = []
    waitingForClaims = nil
  }

  /// Ends the offer over a frame the protocol does not allow here: the sender's doing, which
  /// it is told exactly.
  private func violation(_ text: String) {
    let error = ResourceError.cannotWrite(text)
    abandon(.resource(error), notify: true, saying: error.description)
  }

  /// What the sender is told of a file that could not be stored: the receiving user sees why,
  /// the sender learns nothing of the files and folders already in the destination.
  static let notStored = "could not be stored (the receiving user is told why)"

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

  /// `text` as the peer may read it: this machine's own paths (the destination's location) are
  /// left out, so a sender learns nothing but paths relative to what it offered.
  private func forPeer(_ text: String) -> String {
    // Most acknowledgements carry no reason: nothing to search (once per file).
    guard !text.isEmpty, let root = options?.destination.path, !root.isEmpty else { return text }
    return text.replacing(root + "/", with: "").replacing(root, with: "the destination")
  }
}
