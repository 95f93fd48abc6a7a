import CFerrySystem
import Dispatch
import Foundation
import Synchronization

/// The disk side of one ``IncomingOffer``: its staging area (``StagingArea``), its staged files
/// (``StagedFile``), what the destination holds (``ConfinedDirectory``), space, hashing held
/// files and landing. Each method does the disk work one of ``IncomingOfferStateMachine``'s
/// actions asks for and returns what came of it; the offer feeds that back to the machine. It
/// knows nothing of the machine, the application or the sender's words.
///
/// Confined to the offer's executor, as the offer is; the hashing flags are read on any thread.
final class OfferDisk: @unchecked Sendable {
  typealias Machine = IncomingOfferStateMachine

  /// The sender (its fingerprint names its staged and placed files).
  let sender: Fingerprint
  let offered: [TransferFile]
  let checksum: ChecksumAlgorithm
  /// Whether a file's bytes staged by an earlier attempt are kept (``IncomingOffer/resumes``).
  let resumes: Bool
  let executor: any OfferExecutor
  let hashQueue = DispatchQueue(label: "ferry.incoming-offer.digest")
  /// Set when the offer ends: the held file being hashed is left (any thread).
  let hashingStopped = Atomic<Bool>(false)
  /// The held files whose hashes were left, their comparisons stopped (any thread).
  let hashesLeft = Mutex<Set<Int>>([])
  /// Small files placed since the last early write-back (``placedSmallFile()``).
  var placedSinceWriteBack = 0
  /// Whether an early write-back runs now (any thread).
  let writingBack = WriteBackFlag()

  // Executor-confined.
  var staging: StagingArea?
  /// The staged files open now (those landing beside the executor are not: they were handed
  /// over to ``lane``).
  var files: [Int: StagedFile] = [:]
  /// Where this offer's complete files land, in order, beside the executor.
  let lane = LandingLane()

  init(
    sender: Fingerprint, offered: [TransferFile], checksum: ChecksumAlgorithm, resumes: Bool,
    executor: any OfferExecutor
  ) {
    self.sender = sender
    self.offered = offered
    self.checksum = checksum
    self.resumes = resumes
    self.executor = executor
  }

  // MARK: Staging

  /// Opens the staging area under `options.destination`, removes its stale files (`removed`
  /// hears how many, and how many bytes, when there were some) and claims a staging name per
  /// file: the names, the files whose name another offer holds, and those named afresh.
  func openStaging(
    _ options: ReceiveOptions, removed: (_ files: Int, _ bytes: UInt64) -> Void
  ) -> Result<(names: [String], busy: Set<Int>, fresh: Set<Int>), ResourceError> {
    let staging: StagingArea
    do {
      staging = try StagingArea(destination: options.destination)
    } catch {
      return .failure(error)
    }
    self.staging = staging
    let stale = staging.removeStale(olderThan: options.staleAfter)
    if stale.files > 0 {
      FerryLogging.logger.info(
        "removed \(Quantity.count(stale.files, "stale partial file")), \(Quantity.bytes(stale.bytes)), from the staging folder"
      )
      removed(stale.files, stale.bytes)
    }
    var names: [String] = []
    names.reserveCapacity(offered.count)
    var busy: Set<Int> = []
    var fresh: Set<Int> = []
    for (index, file) in offered.enumerated() {
      let name = staging.name(for: file, from: sender)
      // A streamed file never resumes: it is staged under a name of its own, from nothing (as
      // every file is when the front end's protocol cannot resume).
      if file.isStreamed || !resumes {
        names.append(staging.streamName(like: name))
        fresh.insert(index)
        continue
      }
      names.append(name)
      // One writer per staged file.
      if !staging.claim(name) { busy.insert(index) }
    }
    return .success((names, busy, fresh))
  }

  /// Has `released` called (on the thread that lets it go) with each of files `busy`, whose
  /// staging name (in `slots`) another offer holds, and that name, once it is let go: false (and
  /// nothing is waited for) when no staging area is open.
  func whenReleased(
    _ busy: Set<Int>, slots: [FileSlot],
    _ released: @escaping @Sendable (_ index: Int, _ name: String) -> Void
  ) -> Bool {
    guard let staging else { return false }
    for index in busy {
      let name = slots[index].name
      staging.whenReleased(name) { released(index, name) }
    }
    return true
  }

  /// Claims staging name `name` for this offer: false when another offer holds it.
  func claim(_ name: String) -> Bool {
    staging?.claim(name) ?? false
  }

  /// Names of their own, claimed, for files `indices` whose usual name (in `slots`) stayed
  /// held; nil when no staging area is open.
  func nameFresh(_ indices: [Int], slots: [FileSlot]) -> [Int: String]? {
    guard let staging else { return nil }
    var names: [Int: String] = [:]
    for index in indices { names[index] = staging.uniqueName(like: slots[index].name) }
    return names
  }

  /// Finds out what the destination and the staging area hold for the files asked about (of
  /// `slots`); nil when no staging area is open.
  func survey(
    _ questions: [Machine.Action.Survey], slots: [FileSlot]
  ) -> [Int: Machine.FileFacts]? {
    guard let staging else { return nil }
    let sender = self.sender.bytes
    var facts: [Int: Machine.FileFacts] = [:]
    // Files come folder by folder: each folder is walked to once, not once per file.
    let folders = ConfinedDirectory.FolderCache()
    // Many files asked about: the staging folder is listed once, and only the files in it are
    // looked at (a miss reads as nothing staged; opening it then finds and cuts what is there).
    let listed = questions.count > 16 ? staging.stagedNames() : nil
    for question in questions {
      let slot = slots[question.index]
      var found = Machine.FileFacts()
      if question.held {
        found.heldCopy = staging.destination.heldFile(
          at: slot.path, matching: slot.offered, from: sender, renamed: question.renamed,
          folders: folders)
      }
      if found.heldCopy == nil, question.placedBySender {
        found.placedBySender = staging.destination.holdsFile(
          at: slot.path, from: sender, folders: folders)
      }
      if found.heldCopy == nil, !found.placedBySender, question.staged {
        found.staged = listed?.contains(slot.name) == false ? 0 : staging.stagedLength(slot.name)
      }
      facts[question.index] = found
    }
    return facts
  }

  /// Reserves `bytes` of the staging area's filesystem (free space less what other offers were
  /// promised).
  ///
  /// - Throws: ``ResourceError/insufficientSpace(needed:available:)`` when they do not fit;
  ///   ``ResourceError/cannotWrite(_:)`` when the free space cannot be read.
  func reserve(_ bytes: UInt64) throws(ResourceError) {
    guard let staging else { throw .cannotWrite("no staging folder") }
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

  /// Gives back `bytes` reserved and no longer needed.
  func release(_ bytes: UInt64) {
    guard let staging else { return }
    SpaceReservations.shared.release(bytes, on: staging.device)
  }

  /// Gives up this offer's claims on staging names `names`.
  func releaseNames(_ names: [String]) {
    staging?.release(names)
  }

  /// Records what the (large) staged files `indices` (of `slots`) are, for people.
  func writeMeta(_ indices: [Int], slots: [FileSlot]) {
    for index in indices {
      staging?.writeMeta(slots[index].name, file: offered[index], sender: sender)
    }
  }

  // MARK: Held files

  /// How to hash this side's copy of held file `index` (`slot`), to run off the executor
  /// (``OfferExecutor/runDetached(_:)``), so that the offer's frames and timers never wait for
  /// it: it gives the digest, or nil when the copy cannot be read or the hash was left (the
  /// offer ended, or ``stopHashing(_:)``). Nil when the file is not held here.
  func hashHeld(_ index: Int, _ slot: FileSlot) -> (@Sendable () -> [UInt8]?)? {
    guard let staging, case .held(let copy) = slot.plan else { return nil }
    let (destination, file, checksum) = (staging.destination, slot.offered, self.checksum)
    return {
      destination.digest(
        ofFileAt: copy, matching: file, checksum: checksum,
        while: {
          !self.hashingStopped.load(ordering: .relaxed)
            && !self.hashesLeft.withLock { $0.contains(index) }
        })
    }
  }

  /// Leaves the hash of held file `index` (its comparison stopped).
  func stopHashing(_ index: Int) {
    hashesLeft.withLock { _ = $0.insert(index) }
  }

  /// Leaves every hash of a held file (the offer ends).
  func stopAllHashes() {
    hashingStopped.store(true, ordering: .relaxed)
  }

  /// Whether held file `slot`'s copy is still where it was found, as it was; nil when the file
  /// is not held here (or no staging area is open).
  func holdsHeldCopy(_ slot: FileSlot) -> Bool? {
    guard case .held(let copy) = slot.plan, let staging else { return nil }
    return staging.destination.holdsFile(at: copy, matching: slot.offered, from: sender.bytes)
  }

  // MARK: Staged files

  /// Opens file `index`'s staging file (`slot`) at its offset (hashing what it already holds):
  /// its position, or why it could not; nil when no staging area is open.
  func open(_ index: Int, _ slot: FileSlot) -> Result<UInt64, ResourceError>? {
    guard let staging else { return nil }
    var offset: UInt64 = 0
    if case .receive(let resumed) = slot.plan { offset = resumed }
    do throws(ResourceError) {
      let file = try StagedFile(
        slot.name, in: staging, index: index, offered: slot.offered, offset: offset,
        checksum: checksum, hashingOn: hashQueue)
      files[index] = file
      return .success(file.position)
    } catch {
      return .failure(error)
    }
  }

  /// Writes `piece` to file `index`: its position after, or why it could not; nil when the file
  /// is not open.
  func write(_ index: Int, _ piece: StagedFile.Piece) -> Result<UInt64, ResourceError>? {
    guard let file = files[index] else { return nil }
    do throws(ResourceError) {
      try file.write(piece)
    } catch {
      return .failure(error)
    }
    return .success(file.position)
  }

  /// Closes file `index`'s staging file without settling it (it keeps its bytes).
  func discard(_ index: Int) {
    files.removeValue(forKey: index)?.discard()
  }

  /// Removes a file's staged bytes (and its `.meta`), by its staging name.
  func removeStaged(_ name: String) {
    staging?.remove(name)
  }

  /// Creates empty folder `slot` under the destination of `options`; under the skip policy,
  /// something at its name (or a file or link in its way) leaves it as it is.
  func makeFolder(_ slot: FileSlot, options: ReceiveOptions?) -> Machine.Placement {
    guard let staging, let options else {
      return .failed(.cannotWrite("no staging folder"))
    }
    if options.conflictPolicy == .skip, staging.destination.exists(slot.path) {
      return .skipped(ownedBySender: false)
    }
    do throws(ResourceError) {
      return .placed(
        try staging.destination.makeFolder(at: slot.path, mode: slot.offered.permissions))
    } catch {
      // A file or a link where a folder goes: under the skip policy, a name taken.
      if options.conflictPolicy == .skip, case .unsafeDestination = error {
        return .skipped(ownedBySender: false)
      }
      return .failed(error)
    }
  }

  // MARK: The end

  /// Removes the staging folder if it is empty (the offer ended before it was accepted).
  func cleanUp() {
    staging?.removeIfEmpty()
  }

  /// Flushes the files received to disk, closes the staged files still open (they keep their
  /// bytes) and removes the staging folder if it is empty: the flush's failure, if it failed.
  func finish() -> TransferError? {
    var flushFailure: TransferError?
    if let staging, ferry_syncfs(staging.fd) != 0 {
      // The small files placed by this offer may not survive a crash: say so rather than
      // report them safely stored.
      flushFailure = .resource(
        .cannotWrite("flushing the received files to disk failed: \(errnoText())"))
    }
    for file in files.values { file.discard() }
    files = [:]
    staging?.removeIfEmpty()
    return flushFailure
  }
}
