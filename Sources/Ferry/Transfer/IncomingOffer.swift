import Crypto
import Dispatch
import Foundation
import NIOCore

/// Receives one offer: validates it, checks free space, answers with resume offsets, then
/// writes, hashes, verifies and places each file. All state lives on `queue` (disk I/O never
/// runs on the event loop); frames arrive from the loop in order and are handled in order.
final class IncomingOffer: @unchecked Sendable {
  private let channel: UInt32
  private let peer: PeerID
  private let link: ConnectionLink
  private let offered: [OfferedFile]
  private let options: ReceiveOptions
  private let events: AsyncStream<ResourceEvent>.Continuation
  private let queue = DispatchQueue(label: "ferry.incoming-offer")
  private let hashQueue = DispatchQueue(label: "ferry.incoming-offer.sha256")

  // Queue-confined.
  private var paths: [RelativePath] = []
  private var staging: StagingArea?
  private var names: [String] = []
  private var offsets: [UInt64] = []
  private var transfer: IncomingTransfer?
  private var progress: TransferProgress?
  private var current:
    (index: Int, fd: Int32, hasher: BackgroundHasher, position: UInt64, flushed: UInt64)?
  private var remaining = Set<Int>()
  private var ended = false
  private var pendingCredit = 0
  private var pendingAcks: [Frame] = []

  /// Bytes of a file written between two requests to start their writeback.
  static let writebackStep: UInt64 = 8 << 20

  init(
    channel: UInt32, peer: PeerID, link: ConnectionLink, files: [OfferedFile],
    options: ReceiveOptions, events: AsyncStream<ResourceEvent>.Continuation
  ) {
    self.channel = channel
    self.peer = peer
    self.link = link
    self.offered = files
    self.options = options
    self.events = events
  }

  /// Starts handling (from the loop).
  func start() {
    queue.async { self.prepare() }
  }

  /// A frame for this offer, or the end of its link (from the loop).
  func receive(_ signal: LinkMultiplexer.OfferSignal) {
    switch signal {
    case .frame(let received):
      // A small payload is a slice of the decoder's (much larger) buffer; holding it while the
      // disk catches up would pin that whole buffer. Copy small ones out.
      var frame = received
      if frame.payload.readableBytes < 64 << 10 {
        frame.payload = ByteBuffer(bytes: frame.payload.readableBytesView)
      }
      let owned = frame
      queue.async { self.handle(owned) }
    case .linkClosed(let reason):
      queue.async { self.abandon(.peerDisconnected(reason: reason), notify: false) }
    }
  }

  /// The application cancelled (any thread).
  func cancelFromApplication() {
    queue.async { self.abandon(.cancelled, notify: true) }
  }

  // MARK: Queue

  private func prepare() {
    do {
      paths = []
      for file in offered {
        do {
          paths.append(try RelativePath(validating: file.path))
        } catch {
          throw ResourceError.unsafePath(error)
        }
      }
      do {
        try RelativePath.checkTree(paths)
      } catch {
        throw ResourceError.unsafePath(error)
      }
      let staging = try StagingArea(destination: options.destination)
      self.staging = staging
      staging.removeStale(olderThan: options.staleAfter)
      var needed: Int64 = 0
      for (index, file) in offered.enumerated() {
        let name = staging.name(for: file, from: peer.fingerprint)
        names.append(name)
        if options.conflictPolicy == .skip, existsInDestination(paths[index]) {
          offsets.append(ResourceMessage.skip)
          continue
        }
        let length = staging.stagedLength(name)
        let offset = length <= file.size ? length : 0
        offsets.append(offset)
        needed += Int64(file.size - offset)
        if file.size >= StagingArea.metadataThreshold {
          staging.writeMeta(name, file: file, sender: peer.fingerprint)
        }
      }
      var space = statvfs()
      if fstatvfs(staging.fd, &space) == 0 {
        let available = Int64(space.f_bavail) * Int64(space.f_frsize)
        guard available >= needed else {
          throw ResourceError.insufficientSpace(needed: needed, available: available)
        }
      }
    } catch let error as ResourceError {
      refuse(error)
      return
    } catch {
      refuse(.cannotWrite("\(error)"))
      return
    }
    accept()
  }

  private func accept() {
    let progress = TransferProgress(files: offered.map { ($0.path, $0.size) })
    self.progress = progress
    let transfer = IncomingTransfer(
      peer: peer, files: offered.map { ($0.path, $0.size) }, progress: progress
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
          .finished(name: offered[index].path, peer: peer, result: .success(nil), sha256: nil))
      } else {
        remaining.insert(index)
        progress.advance(index, to: offset)
      }
    }
    events.yield(.offerReceived(transfer))
    let accept = ResourceMessage.offerAccept(channel: channel, offsets: offsets).frame
    link.onMultiplexer { $0.answerOffer(accept) }
    if remaining.isEmpty { finishOffer(error: nil) }
  }

  private func handle(_ frame: WireFrame) {
    guard !ended else { return }
    switch frame.type {
    case .chunk:
      var payload = frame.payload
      guard let index = payload.readInteger(as: UInt32.self).map(Int.init) else { return }
      write(payload, file: index, credit: frame.payload.readableBytes)
    case .fileEnd:
      guard case .fileEnd(_, let file, let digest)? = try? ResourceMessage(frame: frame.flat) else {
        return abandon(.resource(.cannotWrite("malformed FILE_END")), notify: true)
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

  private func write(_ bytes: ByteBuffer, file index: Int, credit: Int) {
    guard remaining.contains(index) else {
      return abandon(
        .resource(.cannotWrite("data for file \(index), which is not expected")), notify: true)
    }
    if current?.index != index {
      guard current == nil, begin(index) else { return }
    }
    guard var state = current else { return }
    let count = bytes.readableBytes
    guard state.position + UInt64(count) <= offered[index].size else {
      return abandon(.resource(.integrityCheckFailed(path: offered[index].path)), notify: true)
    }
    let written = bytes.withUnsafeReadableBytes { buffer -> Int in
      var done = 0
      while done < buffer.count {
        let result = pwrite(
          state.fd, buffer.baseAddress! + done, buffer.count - done,
          off_t(state.position) + off_t(done))
        if result < 0 {
          if errno == EINTR { continue }
          return -1
        }
        done += result
      }
      return done
    }
    guard written == count else {
      let reason = "\(offered[index].path): \(errnoText())"
      return abandon(.resource(.cannotWrite(reason)), notify: true)
    }
    state.hasher.update(bytes)
    state.position += UInt64(count)
    // Start writing a large file back to disk as it arrives, so that the fsync(2) before it is
    // placed has little left to do (rather than flushing the whole file at the end).
    if state.position - state.flushed >= Self.writebackStep {
      _ = startWriteback(
        state.fd, off_t(state.flushed), off_t(state.position - state.flushed),
        syncFileRangeWrite)
      state.flushed = state.position
    }
    current = state
    progress?.advance(index, to: state.position)
    // Credit is handed back per MiB written, in one hop (the multiplexer batches further).
    pendingCredit += credit
    if pendingCredit >= 1 << 20 { flushCredit() }
  }

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

  /// Opens file `index`'s staging file at its offset and hashes what it already holds.
  private func begin(_ index: Int) -> Bool {
    guard let staging else { return false }
    do {
      let (fd, length) = try staging.open(names[index])
      var hasher = SHA256()
      let offset = offsets[index]
      guard length >= offset else {
        close(fd)
        abandon(
          .resource(.cannotWrite("staged data of \(offered[index].path) shrank")), notify: true)
        return false
      }
      ftruncate(fd, off_t(offset))
      var buffer = [UInt8](repeating: 0, count: offset > 0 ? 1 << 20 : 0)
      var position: UInt64 = 0
      while position < offset {
        let want = Int(min(UInt64(buffer.count), offset - position))
        let count = buffer.withUnsafeMutableBytes {
          pread(fd, $0.baseAddress, want, off_t(position))
        }
        guard count > 0 else { break }
        hasher.update(data: buffer[0..<count])
        position += UInt64(count)
      }
      let hashing = BackgroundHasher(
        continuing: hasher, size: offered[index].size - offset, on: hashQueue)
      current = (index, fd, hashing, offset, offset)
      events.yield(.started(name: offered[index].path, peer: peer, progress: progress!.file(index)))
      return true
    } catch {
      abandon(.resource(error), notify: true)
      return false
    }
  }

  private func finishFile(_ index: Int, digest: [UInt8]) {
    guard remaining.contains(index) else { return }
    if current == nil {
      guard begin(index) else { return }  // nothing sent: empty, or wholly staged before
    }
    guard let state = current, state.index == index, let staging else {
      return abandon(.resource(.cannotWrite("FILE_END out of order")), notify: true)
    }
    current = nil
    remaining.remove(index)
    let file = offered[index]
    let path = file.path
    let intact = state.position == file.size && state.hasher.finalize() == digest
    guard intact else {
      close(state.fd)
      staging.remove(names[index])
      conclude(
        index, .corrupt, reason: "SHA-256 mismatch",
        result: .failure(.resource(.integrityCheckFailed(path: path))))
      return
    }
    fchmod(state.fd, mode_t(file.mode & 0o777))
    var times = [
      timespec(tv_sec: Int(file.modificationSeconds), tv_nsec: Int(file.modificationNanoseconds)),
      timespec(tv_sec: Int(file.modificationSeconds), tv_nsec: Int(file.modificationNanoseconds)),
    ]
    futimens(state.fd, &times)
    // Large files are flushed before they are placed; small ones share one syncfs(2) at the end
    // of the offer (a per-file fsync would cost more than the transfer).
    let synced = file.size < StagingArea.metadataThreshold || fsync(state.fd) == 0
    close(state.fd)
    guard synced else {
      staging.remove(names[index])
      conclude(
        index, .failed, reason: errnoText(),
        result: .failure(.resource(.cannotWrite("\(path): \(errnoText())"))))
      return
    }
    guard options.relocate else {
      let staged = staging.destination.root
        .appendingPathComponent(StagingArea.directoryName).appendingPathComponent(names[index])
      unlinkat(staging.fd, names[index] + ".meta", 0)
      conclude(index, .stored, reason: "", result: .success(staged), sha256: digest)
      return
    }
    do {
      let placed = try staging.destination.place(
        names[index], from: staging.fd, at: paths[index], policy: options.conflictPolicy)
      if placed == nil {
        staging.remove(names[index])
      } else {
        unlinkat(staging.fd, names[index] + ".meta", 0)
      }
      conclude(
        index, placed == nil ? .skipped : .stored, reason: "", result: .success(placed),
        sha256: digest)
    } catch {
      staging.remove(names[index])
      conclude(index, .failed, reason: error.description, result: .failure(.resource(error)))
    }
  }

  private func conclude(
    _ index: Int, _ status: ResourceMessage.FileStatus, reason: String,
    result: Result<URL?, TransferError>, sha256: [UInt8]? = nil
  ) {
    progress?.complete(index)
    events.yield(
      .finished(name: offered[index].path, peer: peer, result: result, sha256: sha256))
    pendingAcks.append(
      ResourceMessage.fileAck(channel: channel, file: UInt32(index), status, reason: reason).frame)
    if remaining.isEmpty {
      finishOffer(error: nil)
    } else if pendingAcks.count >= 256 {
      flushAcks()
    } else if pendingAcks.count == 1 {
      // The sender only waits for acks at its end; gather them for a moment.
      queue.asyncAfter(deadline: .now() + .milliseconds(20)) { self.flushAcks() }
    }
  }

  private func refuse(_ error: ResourceError) {
    ended = true
    let channel = self.channel
    link.onMultiplexer {
      $0.answerOffer(
        TransferMessage.reset(channel: channel, .refused, reason: error.description).frame)
      $0.closeOffer(channel: channel)
    }
    events.yield(
      .finished(
        name: offered.first?.path ?? "", peer: peer, result: .failure(.resource(error)),
        sha256: nil))
  }

  /// Stops receiving: the file in progress keeps its staged bytes (for resume), nothing is
  /// placed; the peer is told unless it is the one who stopped.
  private func abandon(_ error: TransferError, notify: Bool) {
    guard !ended else { return }
    if let state = current {
      close(state.fd)
      current = nil
      if case .resource(.integrityCheckFailed) = error, let staging {
        staging.remove(names[state.index])
      }
    }
    for index in remaining.sorted() {
      progress?.complete(index)
      events.yield(
        .finished(name: offered[index].path, peer: peer, result: .failure(error), sha256: nil))
    }
    remaining = []
    let channel = self.channel
    if notify {
      let code: TransferMessage.ResetCode = error == .cancelled ? .cancelled : .failed
      link.onMultiplexer {
        $0.answerOffer(
          TransferMessage.reset(channel: channel, code, reason: error.description).frame)
      }
    }
    finishOffer(error: error)
  }

  private func finishOffer(error: TransferError?) {
    guard !ended else { return }
    ended = true
    progress?.finish()
    if let staging { _ = systemSyncfs(staging.fd) }
    staging?.removeIfEmpty()
    // The offer is reported finished once its last FILE_ACKs are written to the connection, so
    // that an application may exit on that event without cutting them off.
    let (channel, acks, events) = (self.channel, pendingAcks, self.events)
    pendingAcks = []
    let finished = transfer.map { ResourceEvent.offerFinished($0, error: error) }
    link.onMultiplexer(
      { multiplexer in
        if !acks.isEmpty { multiplexer.answerOffer(acks) }
        multiplexer.closeOffer(channel: channel)
      },
      then: { if let finished { events.yield(finished) } })
  }

  private func existsInDestination(_ path: RelativePath) -> Bool {
    var status = stat()
    return lstat(options.destination.appendingPathComponent(path.description).path, &status) == 0
  }
}

/// glibc's syncfs(2), which the Glibc module does not export.
@_silgen_name("syncfs")
private func systemSyncfs(_ fd: Int32) -> Int32

/// sync_file_range(2), which the Glibc module does not export (it needs _GNU_SOURCE).
@_silgen_name("sync_file_range")
private func startWriteback(_ fd: Int32, _ offset: off_t, _ count: off_t, _ flags: UInt32) -> Int32

/// SYNC_FILE_RANGE_WRITE: start writeback of the range's dirty pages, without waiting.
private let syncFileRangeWrite: UInt32 = 2
