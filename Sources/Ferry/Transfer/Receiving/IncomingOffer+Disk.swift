import CFerrySystem
import Foundation

/// The disk side of ``IncomingOffer``'s actions: the staging area, claims, what the destination
/// holds, space, staged files and placing. On the offer's executor.
extension IncomingOffer {
  /// Opens the staging area, removes its stale files and claims a staging name per file.
  func openStaging(_ options: ReceiveOptions, _ actions: inout [Machine.Action]) {
    destinationPath = options.destination.path
    let staging: StagingArea
    do {
      staging = try StagingArea(destination: options.destination)
    } catch {
      return machine.stagingOpened(.failure(error), into: &actions)
    }
    self.staging = staging
    let stale = staging.removeStale(olderThan: options.staleAfter)
    if stale.files > 0 {
      FerryLogging.logger.info(
        "removed \(Quantity.count(stale.files, "stale partial file")), \(Quantity.bytes(stale.bytes)), from the staging folder"
      )
      emit(
        .staleStagingRemoved(
          files: stale.files, bytes: stale.bytes, destination: options.destination))
    }
    var names: [String] = []
    names.reserveCapacity(offered.count)
    var busy: Set<Int> = []
    var fresh: Set<Int> = []
    for (index, file) in offered.enumerated() {
      let name = staging.name(for: file, from: peer.fingerprint)
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
    machine.stagingOpened(.success((names, busy, fresh)), into: &actions)
  }

  /// Waits for names other offers hold: each is claimed as soon as it is let go, while the
  /// offer still waits for it; after ``IncomingOfferStateMachine/claimWait`` the rest get names
  /// of their own.
  func waitForClaims(_ busy: Set<Int>) {
    guard let staging else { return }
    for index in busy {
      let name = machine.slots[index].name
      staging.whenReleased(name) { [weak self] in
        guard let self else { return }
        self.executor.run {
          guard self.machine.waitsForClaim(index), staging.claim(name) else { return }
          self.run { $0.claimed(index, into: &$1) }
        }
      }
    }
    executor.run(after: Machine.claimWait) { [weak self] in
      self?.run { $0.claimWaitOver(into: &$1) }
    }
  }

  /// Names of their own, claimed, for files whose usual name stayed held.
  func nameFresh(_ indices: [Int], _ actions: inout [Machine.Action]) {
    guard let staging else { return }
    var names: [Int: String] = [:]
    for index in indices { names[index] = staging.uniqueName(like: machine.slots[index].name) }
    machine.namedFresh(names, into: &actions)
  }

  /// Finds out what the destination and the staging area hold for the files asked about.
  func survey(_ questions: [Machine.Action.Survey], _ actions: inout [Machine.Action]) {
    guard let staging else { return }
    let slots = machine.slots
    let sender = peer.fingerprint.bytes
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
    machine.surveyed(facts, into: &actions)
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

  /// Hashes this side's copy of held file `index`, off the executor (``OfferExecutor/runDetached(_:)``):
  /// the offer's frames and timers never wait for it.
  func hashHeld(_ index: Int) {
    let slot = machine.slots[index]
    guard let staging, case .held(let copy) = slot.plan else { return }
    let (destination, file, checksum) = (staging.destination, slot.offered, self.checksum)
    executor.runDetached { [weak self] in
      guard let self else { return }
      let digest = destination.digest(
        ofFileAt: copy, matching: file, checksum: checksum,
        while: {
          !self.hashingStopped.load(ordering: .relaxed)
            && !self.hashesLeft.withLock { $0.contains(index) }
        })
      self.handle { $0.heldHashed(index, digest ?? [], now: .now, into: &$1) }
    }
  }

  /// Opens file `index`'s staging file at its offset (hashing what it already holds).
  func open(_ index: Int, _ actions: inout [Machine.Action]) {
    let slot = machine.slots[index]
    guard let staging else { return }
    var offset: UInt64 = 0
    if case .receive(let resumed) = slot.plan { offset = resumed }
    do throws(ResourceError) {
      let file = try StagedFile(
        slot.name, in: staging, index: index, offered: slot.offered, offset: offset,
        checksum: checksum, hashingOn: hashQueue)
      files[index] = file
      machine.opened(index, .success(file.position), into: &actions)
    } catch {
      machine.opened(index, .failure(error), into: &actions)
    }
  }

  /// Writes the piece the event brought to file `index`.
  func write(_ index: Int, _ actions: inout [Machine.Action]) {
    guard let file = files[index], let piece else { return }
    do throws(ResourceError) {
      try file.write(piece)
    } catch {
      return machine.wrote(index, .failure(error), into: &actions)
    }
    var holes: UInt64 = 0
    if case .hole(let length) = piece { holes = length }
    progress?.advance(index, to: file.position, uncrossed: holes)
    machine.wrote(index, .success(()), into: &actions)
  }

  /// Creates empty folder `index` under the destination; under the skip policy, something at
  /// its name (or a file or link in its way) leaves it as it is.
  func makeFolder(_ index: Int) -> Machine.Placement {
    let slot = machine.slots[index]
    guard let staging, let options = machine.options else {
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
}
