import Foundation

/// The disk actions whose work (by ``OfferDisk``) takes more than one step, or another thread:
/// what comes of each is fed back to the machine. On the offer's executor.
extension IncomingOffer {
  /// Opens the staging area, removes its stale files and claims a staging name per file.
  func openStaging(_ options: ReceiveOptions, _ actions: inout [Machine.Action]) {
    destinationPath = options.destination.path
    let opened = disk.openStaging(options) { files, bytes in
      emit(.staleStagingRemoved(files: files, bytes: bytes, destination: options.destination))
    }
    machine.stagingOpened(opened, into: &actions)
  }

  /// Waits for names other offers hold: each is claimed as soon as it is let go, while the
  /// offer still waits for it; after ``IncomingOfferStateMachine/claimWait`` the rest get names
  /// of their own.
  func waitForClaims(_ busy: Set<Int>) {
    let waiting = disk.whenReleased(busy, slots: machine.slots) { [weak self] index, name in
      guard let self else { return }
      self.executor.run {
        guard self.machine.waitsForClaim(index), self.disk.claim(name) else { return }
        self.run { $0.claimed(index, into: &$1) }
      }
    }
    guard waiting else { return }
    executor.run(after: Machine.claimWait) { [weak self] in
      self?.run { $0.claimWaitOver(into: &$1) }
    }
  }

  /// Hashes this side's copy of held file `index`, off the executor
  /// (``OfferExecutor/runDetached(_:)``): the offer's frames and timers never wait for it.
  func hashHeld(_ index: Int) {
    guard let hash = disk.hashHeld(index, machine.slots[index]) else { return }
    executor.runDetached { [weak self] in
      guard let self else { return }
      let digest = hash()
      self.handle { $0.heldHashed(index, digest ?? [], now: .now, into: &$1) }
    }
  }

  /// Writes the piece the event brought to file `index`.
  func write(_ index: Int, _ actions: inout [Machine.Action]) {
    guard let piece, let written = disk.write(index, piece) else { return }
    switch written {
    case .failure(let error):
      machine.wrote(index, .failure(error), into: &actions)
    case .success(let position):
      var holes: UInt64 = 0
      if case .hole(let length) = piece { holes = length }
      progress?.advance(index, to: position, uncrossed: holes)
      machine.wrote(index, .success(()), into: &actions)
    }
  }

  /// Lands file `index` (its end came with `digest`): at once, or beside the executor
  /// (``OfferDisk/land(_:digest:slots:options:landedBeside:)``).
  func land(_ index: Int, digest: [UInt8]?, _ actions: inout [Machine.Action]) {
    let landing = disk.land(
      index, digest: digest, slots: machine.slots, options: machine.options
    ) { [self] outcomes in
      // Back on the executor.
      self.asOneTurn {
        for (index, landing) in outcomes {
          self.noteLanded(index, landing)
          self.run { $0.landed(index, landing, into: &$1) }
        }
      }
    }
    guard let landing else { return }
    noteLanded(index, landing)
    machine.landed(index, landing, into: &actions)
  }

  /// Counts file `index` toward an early write-back (``OfferDisk/placedSmallFile()``) if it is
  /// a small one placed under the destination.
  private func noteLanded(_ index: Int, _ landing: Machine.Landing) {
    guard case .settled(.placed, _) = landing, machine.options?.relocate == true,
      machine.slots[index].position < StagingArea.metadataThreshold  // large ones are fsync'd
    else { return }
    disk.placedSmallFile()
  }
}
