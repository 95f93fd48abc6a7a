import CFerrySystem
import Dispatch
import Foundation
import NIOCore

/// One file being received into its staging file, the disk side of an ``IncomingOffer``: opened
/// at the offset the offer accepted (the bytes staged before it hashed again), written at its
/// position and hashed as it goes, written back to disk in steps, then settled — checked
/// against the sender's digest, given the sender's mode (narrowed by the umask) and times,
/// flushed and closed, every system call's result checked. It knows nothing of frames, credit
/// or where the file will be placed. Confined to the offer's executor.
package final class StagedFile {
  /// How a file ended on disk.
  enum Settlement: Equatable {
    /// Complete, intact, flushed (large files) and closed: ready to be placed; `digest` is the
    /// digest of its bytes.
    case settled(digest: [UInt8])
    /// Its size or digest differs from what the sender announced.
    case corrupt
    /// A system call failed (`reason`); the staged bytes cannot be trusted.
    case failed(reason: String)
  }

  /// What comes next in the file.
  package enum Piece: Sendable {
    /// Bytes to write.
    case bytes(ByteBuffer)
    /// A hole of this many zero bytes, left unwritten (the file stays sparse).
    case hole(UInt64)
  }

  /// Bytes written between two requests to start their writeback.
  static let writebackStep: UInt64 = 8 << 20

  /// The file's index in its offer.
  let index: Int
  /// The file as offered.
  let offered: TransferFile
  /// Bytes of the file on disk so far (resumed prefix included).
  private(set) var position: UInt64
  private var fd: Int32
  private let hasher: BackgroundHasher
  private var flushed: UInt64
  /// Where the file's last written byte ends: short of ``position`` when it ends in a hole.
  private var written: UInt64
  /// Whether it was created now with its final permission bits (no fchmod when it settles).
  private let modeSet: Bool

  /// Opens staging file `name` of `staging`, cuts it to `offset` bytes and hashes those.
  ///
  /// - Throws: ``ResourceError/cannotWrite(_:)`` when it cannot be opened, is shorter than
  ///   `offset` (it shrank since the offer was answered) or cannot be read back or cut.
  init(
    _ name: String, in staging: StagingArea, index: Int, offered: TransferFile, offset: UInt64,
    checksum: ChecksumAlgorithm, hashingOn queue: DispatchQueue
  ) throws(ResourceError) {
    // Created with its final permission bits when it can be (the staging folder is this
    // user's alone, 0700): the sender's, narrowed by the umask — but one its owner may not
    // write to could not take its attribute, and gets them when it is settled.
    let mode = mode_t(offered.permissions & 0o777)
    let direct = mode & 0o200 != 0
    let (fd, length, created) = try staging.open(name, creatingWith: direct ? mode : 0o600)
    self.modeSet = created && direct
    guard length >= offset else {
      close(fd)
      throw .cannotWrite("staged data of \(offered.path) shrank")
    }
    // Only when there is something to cut: ext4 flushes a file truncated and then closed
    // (auto_da_alloc), which for many small new files cost more than writing them.
    guard length == offset || ftruncate(fd, off_t(offset)) == 0 else {
      let reason = errnoText()
      close(fd)
      throw .cannotWrite("\(offered.path): \(reason)")
    }
    var hasher = ContentHasher(checksum)
    guard hashPrefix(of: fd, length: offset, into: &hasher) else {
      let reason = errno != 0 ? errnoText() : "staged data of \(offered.path) shrank"
      close(fd)
      throw .cannotWrite("\(offered.path): \(reason)")
    }
    self.index = index
    self.offered = offered
    self.fd = fd
    self.position = offset
    self.flushed = offset
    self.written = offset
    self.hasher = BackgroundHasher(
      hasher, size: offered.isStreamed ? .max : offered.size - offset, on: queue)
  }

  /// The most bytes the file may hold: its size, or for a streamed file (whose size is what
  /// arrives) the most any file may have.
  private var limit: UInt64 {
    offered.isStreamed ? ProtocolLimits.maximumFileSize : offered.size
  }

  deinit {
    discard()
  }

  /// Appends `piece` at ``position``: bytes are written; a hole only moves the position (and
  /// is hashed as zeros), so that it stays a hole on disk.
  ///
  /// - Throws: ``ResourceError/integrityCheckFailed(path:)`` when it would make the file
  ///   larger than offered; ``ResourceError/cannotWrite(_:)`` when pwrite(2) fails.
  func write(_ piece: Piece) throws(ResourceError) {
    let bytes: ByteBuffer
    switch piece {
    case .bytes(let buffer):
      bytes = buffer
    case .hole(let length):
      guard limit - position >= length else {
        throw .integrityCheckFailed(path: offered.path)
      }
      hasher.updateZeros(length)
      position += length
      return
    }
    let count = bytes.readableBytes
    guard limit - position >= UInt64(count) else {
      throw .integrityCheckFailed(path: offered.path)
    }
    let (fd, start) = (self.fd, position)
    let done = bytes.withUnsafeReadableBytes { buffer -> Int in
      var done = 0
      while done < buffer.count {
        let result = pwrite(
          fd, buffer.baseAddress! + done, buffer.count - done, off_t(start) + off_t(done))
        if result < 0 {
          if errno == EINTR { continue }
          return -1
        }
        done += result
      }
      return done
    }
    guard done == count else { throw .cannotWrite("\(offered.path): \(errnoText())") }
    hasher.update(bytes)
    position += UInt64(count)
    written = position
    // Start writing a large file back to disk as it arrives, so that the fsync(2) before it is
    // placed has little left to do (rather than flushing the whole file at the end).
    if position - flushed >= Self.writebackStep {
      // Only a head start: should it fail, the fsync(2) before placing flushes all the same.
      _ = ferry_start_writeback(fd, off_t(flushed), off_t(position - flushed))
      flushed = position
    }
  }

  /// Ends the file: checks it against `digest` (nil: its length only — a sender that gave no
  /// digest), records `sender` and the path offered
  /// (``ConfinedDirectory/placementAttribute``),
  /// sets its mode and times, flushes it when it is large (small ones share one syncfs(2) at the
  /// end of the offer: a per-file fsync would cost more than the transfer) and closes it. The
  /// file is closed whatever the outcome.
  func settle(digest expected: [UInt8]?, sender: [UInt8]) -> Settlement {
    defer { discard() }
    let digest = hasher.finalize()
    guard position == offered.size || offered.isStreamed, expected == nil || digest == expected
    else { return .corrupt }
    // A file that ends in a hole: its length, without writing the zeros.
    if written < position {
      guard ftruncate(fd, off_t(position)) == 0 else { return .failed(reason: errnoText()) }
    }
    // The sender's permission bits, narrowed by this process's umask (a sender cannot make a
    // file writable by others where the user would not have): given when it was created, or
    // now.
    let mode = mode_t(offered.permissions & 0o777) & ~processUmask
    // Before fchmod: a file made read-only would refuse its owner the attribute. Where the
    // filesystem keeps no extended attributes (ENOTSUP), the file is only never compared when
    // the same sender sends it again: it is stored all the same.
    _ = (sender + Array(offered.path.utf8)).withUnsafeBytes {
      ferry_set_attribute(fd, ConfinedDirectory.placementAttribute, $0.baseAddress, $0.count)
    }
    guard modeSet || fchmod(fd, mode) == 0 else { return .failed(reason: errnoText()) }
    let time = timespec(
      tv_sec: Int(offered.modificationSeconds), tv_nsec: Int(offered.modificationNanoseconds))
    var times = [time, time]
    guard futimens(fd, &times) == 0 else { return .failed(reason: errnoText()) }
    if position >= StagingArea.metadataThreshold {
      guard fsync(fd) == 0 else { return .failed(reason: errnoText()) }
    }
    // close(2) is where a network filesystem reports a write it could not make.
    let closed = close(fd)
    fd = -1
    return closed == 0 ? .settled(digest: digest) : .failed(reason: errnoText())
  }

  /// Closes the file without settling it (its staged bytes stay, for a resume). Idempotent.
  func discard() {
    guard fd >= 0 else { return }
    close(fd)
    fd = -1
  }
}
