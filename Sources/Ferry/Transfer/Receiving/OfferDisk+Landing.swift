import CFerrySystem
import Dispatch
import Foundation

/// Landing files: each complete file's staging file settled against its digest and placed
/// under the destination — beside the offer's executor (``LandingLane``), so that receiving
/// the next files does not wait for the kernel's work on the last ones.
extension OfferDisk {
  /// Lands file `index` (of `slots`; its end came with `digest`) into `options`: handed to the
  /// offer's ``LandingLane`` — nil is returned, and `landedBeside` hears, on the executor, how
  /// it and the files landed with it came out — unless the lane or the process holds as much
  /// as it may, in which case it lands at once: how it came out. On the executor.
  func land(
    _ index: Int, digest: [UInt8]?, slots: [FileSlot], options: ReceiveOptions?,
    landedBeside: @escaping @Sendable ([(index: Int, landing: Machine.Landing)]) -> Void
  ) -> Machine.Landing? {
    guard let file = files.removeValue(forKey: index), let staging, let options else {
      return .failed("its staging file is not open")
    }
    let lander = Lander(
      staging: staging, options: options, sender: sender.bytes, slot: slots[index])
    let job = LandingLane.Job(index: index, file: file, lander: lander, digest: digest)
    guard lane.take(job, executor: executor, landed: landedBeside) else {
      return lander.land(file, digest: digest)
    }
    return nil
  }

  /// Counts small files placed under the destination (under
  /// ``StagingArea/metadataThreshold``: large ones are fsync'd), and every ``writeBackStep`` of
  /// them starts writing the filesystem back in the background (syncfs(2) on a queue of its
  /// own, one at a time), so that the offer's last flush — which alone says the files are safe
  /// — has little left to do. On the executor.
  func placedSmallFile() {
    guard let staging else { return }
    placedSinceWriteBack += 1
    guard placedSinceWriteBack >= Self.writeBackStep, writingBack.claim() else { return }
    placedSinceWriteBack = 0
    let writingBack = self.writingBack
    DispatchQueue.global(qos: .utility).async {
      _ = ferry_syncfs(staging.fd)
      writingBack.release()
    }
  }

  /// How many small files are placed between two early write-backs.
  static let writeBackStep = 2048
}

/// What landing one file needs, copied from the offer: usable on any thread.
struct Lander: Sendable {
  let staging: StagingArea
  let options: ReceiveOptions
  /// The sender's fingerprint (it names the files it placed).
  let sender: [UInt8]
  let slot: FileSlot

  /// Settles `file` against `digest` and, if it holds what was sent, places it.
  func land(_ file: StagedFile, digest: [UInt8]?) -> IncomingOfferStateMachine.Landing {
    switch file.settle(digest: digest, sender: sender) {
    case .corrupt: return .corrupt
    case .failed(let reason): return .failed(reason)
    case .settled(let digest): return .settled(place(), digest: digest)
    }
  }

  /// Moves the settled file where it belongs: under the destination (``ConfinedDirectory``, by
  /// descriptors only), or handed over in place when the options do not relocate. Under the
  /// skip policy, a file whose name is taken (or with a file or a link where one of its folders
  /// goes) is dropped here, after it was received.
  private func place() -> IncomingOfferStateMachine.Placement {
    let skipping = options.conflictPolicy == .skip
    do throws(ResourceError) {
      guard options.relocate else {
        if skipping, staging.destination.exists(slot.path) {
          staging.remove(slot.name)
          return .skipped(ownedBySender: ownedBySender())
        }
        return .placed(try staging.handOver(slot.name))
      }
      guard let placed = try staging.place(slot.name, at: slot.path, policy: options.conflictPolicy)
      else {
        staging.remove(slot.name)
        return .skipped(ownedBySender: ownedBySender())
      }
      if slot.offered.size >= StagingArea.metadataThreshold {
        staging.removeMeta(slot.name)  // only large files have one
      }
      return .placed(placed)
    } catch {
      staging.remove(slot.name)
      if skipping, case .unsafeDestination = error {
        return .skipped(ownedBySender: ownedBySender())
      }
      return .failed(error)
    }
  }

  /// Whether what is at the file's name is a file this sender placed (what it may be told).
  private func ownedBySender() -> Bool {
    !slot.offered.isFolder && staging.destination.holdsFile(at: slot.path, from: sender)
  }
}
