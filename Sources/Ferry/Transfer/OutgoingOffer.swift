import CFerrySystem
import Crypto
import FerryWire
import Foundation
import NIOCore
import Synchronization

/// Sends one offer over a link: OFFER, then each file's chunks and FILE_END, pipelined with no
/// round trip per file, then waits for every FILE_ACK.
final class OutgoingOffer: Sendable {
  let bytesSent = Atomic<UInt64>(0)
  /// Frames heard from the receiver on this offer: with ``bytesSent``, what shows progress.
  private let framesHeard = Atomic<UInt64>(0)
  /// Bytes of resumed prefixes read and hashed here: work of this side's own, not a stall.
  private let prefixRead = Atomic<UInt64>(0)
  /// Empty CHUNKs sent while a streamed file's writer was quiet: waiting for this side's own
  /// input, not a stall.
  private let idleSent = Atomic<UInt64>(0)
  private let stall: Duration
  private let files: [OfferedFile]
  private let urls: [URL]
  private let link: ConnectionLink
  private let progress: TransferProgress
  private let hashQueue = DispatchQueue(label: "ferry.outgoing-offer.digest")
  /// The digest asked for; the one used is in ``State/checksum`` once the offer is open.
  private let requestedChecksum: ChecksumAlgorithm
  private let state = Mutex(State())

  private struct State {
    var channel: UInt32?
    /// The digest the offer uses (SHA-256 with a peer older than version 3).
    var checksum = ChecksumAlgorithm.sha256
    /// Whether the receiver takes HOLE frames (version 3): sparse files are sent sparse.
    var holes = false
    var offsets: [UInt64]?
    var acceptWaiter: CheckedContinuation<[UInt64], any Error>?
    var results: [Int: FileResult] = [:]
    var digests: [Int: [UInt8]] = [:]
    var expected = 0
    var doneWaiter: CheckedContinuation<[Int]?, any Error>?
    var failure: TransferError?
    /// Files the receiver's destination holds with the same size and time: their digest goes
    /// first, and the file itself only when the receiver answers that the content differs.
    var held: Set<Int> = []
    /// Held files the receiver asked for whole, not sent yet.
    var resend: [Int] = []
    /// Held files asked for already (each may be asked for once).
    var asked: Set<Int> = []
    /// How long this side took to hash each held file whose digest it sent: about as long as
    /// the receiver takes to hash its own copy.
    var hashTimes: [Int: Duration] = [:]
    /// The bytes of each file this attempt sent (from its offset, or from 0 for a held file
    /// sent whole).
    var sent: [Int: Range<UInt64>] = [:]
    var cancelled = false
    /// The streamed file being read, if one is: stopped when the offer fails.
    var source: StreamSource?
    /// What the receiver is told when this side fails: only paths relative to the offer.
    var reasonForPeer: String?
  }

  init(
    files: [OfferedFile], urls: [URL], link: ConnectionLink, progress: TransferProgress,
    checksum: ChecksumAlgorithm = .xxh3, stall: Duration = ConnectionTimeouts().transferStall
  ) {
    self.requestedChecksum = checksum
    self.stall = stall
    self.files = files
    self.urls = urls
    self.link = link
    self.progress = progress
  }

  func run() async throws -> [FileResult] {
    let (files, requested) = (self.files, requestedChecksum.wire)
    let (channel, digest, holes) = try await link.withMultiplexer { [self] multiplexer in
      multiplexer.openOffer(files, digest: requested) { signal in
        switch signal {
        case .frame(let frame): self.answered(frame)
        case .linkClosed(let reason): self.fail(.peerDisconnected(reason: reason))
        }
      }
    }.get()
    let checksum = ChecksumAlgorithm(digest)
    let cancelledEarly = state.withLock { state in
      state.channel = channel
      state.checksum = checksum
      state.holes = holes
      return state.cancelled
    }
    if cancelledEarly { cancel() }
    let watchdog = Task { await watchForStall(channel: channel) }
    defer { watchdog.cancel() }
    do {
      let offsets = try await withCheckedThrowingContinuation { continuation in
        let ready = state.withLock { state -> Result<[UInt64], TransferError>? in
          if let failure = state.failure { return .failure(failure) }
          if let offsets = state.offsets { return .success(offsets) }
          state.acceptWaiter = continuation
          return nil
        }
        if let ready { continuation.resume(with: ready) }
      }
      for (index, offset) in offsets.enumerated() where offset == ResourceMessage.skip {
        progress.complete(index)
        state.withLock {
          $0.results[index] = FileResult(
            path: files[index].path, status: .skipped, reason: "", digest: [],
            checksum: checksum)
        }
      }
      state.withLock { $0.expected = offsets.filter { $0 != ResourceMessage.skip }.count }
      var inFlight = InFlight()
      let held = state.withLock { $0.held }
      // Held files' digests first, so that the receiver can answer while the rest is sent.
      for index in held.sorted() {
        try await sendDigest(index, channel: channel, inFlight: &inFlight)
      }
      for (index, offset) in offsets.enumerated()
      where offset != ResourceMessage.skip && !held.contains(index) {
        try await send(index, from: offset, channel: channel, inFlight: &inFlight)
      }
      try await inFlight.drain(link: link, channel: channel)
      // Then every held file the receiver has other content for, whole, until all are answered.
      while let resend = try await nextResend() {
        for index in resend {
          try await send(index, from: 0, channel: channel, inFlight: &inFlight)
        }
        try await inFlight.drain(link: link, channel: channel)
      }
    } catch {
      // The first failure recorded (a cancel, the peer's RESET) is the cause; what the send
      // loop hit afterwards (a channel already closed) is only its echo.
      let transferError =
        state.withLock { $0.failure } ?? (error as? TransferError)
        ?? .peerDisconnected(reason: "\(error)")
      abandon(channel: channel, transferError)
      progress.finish()
      throw transferError
    }
    link.onMultiplexer { $0.closeOffer(channel: channel) }
    progress.finish()
    return state.withLock { state in (0..<files.count).compactMap { state.results[$0] } }
  }

  /// What this attempt came to, file by file, for a retrying send's idea of progress
  /// (``SendProgress``): where the receiver said each file starts, whether it stored it (or
  /// found it identical), and which of its bytes were sent.
  var delivery: [SendProgress.File] {
    state.withLock { state in
      files.indices.map { index in
        let offset = state.offsets.map { $0[index] }
        let status = state.results[index]?.status
        return SendProgress.File(
          path: files[index].path, size: files[index].size,
          offset: offset == ResourceMessage.skip ? nil : offset,
          stored: status == .stored || status == .identical, sent: state.sent[index],
          result: state.results[index])
      }
    }
  }

  func cancel() {
    let channel = state.withLock { state -> UInt32? in
      state.cancelled = true
      return state.channel
    }
    guard let channel else { return }
    fail(.cancelled)
    abandon(channel: channel, .cancelled)
  }

  /// Reads, hashes and sends file `index` from `offset` (hashing the bytes before it too).
  /// Frames are queued without waiting for each: up to ``InFlight/limit`` batches are in
  /// flight, and a file's last CHUNK travels with its FILE_END, so a small file costs one hop.
  /// Waits until every file is answered (nil) or the receiver asks for held files whole (them).
  private func nextResend() async throws -> [Int]? {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<[Int]?, any Error>) in
      let ready = state.withLock { state -> Result<[Int]?, TransferError>? in
        if let failure = state.failure { return .failure(failure) }
        if !state.resend.isEmpty {
          defer { state.resend = [] }
          return .success(state.resend)
        }
        if state.results.count == files.count { return .success(nil) }
        state.doneWaiter = continuation
        return nil
      }
      if let ready { continuation.resume(with: ready) }
    }
  }

  /// Reads and hashes held file `index` and sends only its FILE_END: the receiver compares the
  /// digest with what it holds.
  private func sendDigest(_ index: Int, channel: UInt32, inFlight: inout InFlight) async throws {
    let (fd, _) = try openOffered(index)
    defer { close(fd) }
    let hasher = BackgroundHasher(
      ContentHasher(state.withLock { $0.checksum }), size: files[index].size, on: hashQueue)
    let started = ContinuousClock.now
    try await hashPrefix(fd, upTo: files[index].size, into: hasher, index: index)
    let digest = await hasher.finalize()
    let took = ContinuousClock.now - started
    state.withLock {
      $0.digests[index] = digest
      $0.hashTimes[index] = took
    }
    try await inFlight.add(
      [frame(.fileEnd(channel: channel, file: UInt32(index), digest: digest))], link: link,
      channel: channel)
    // At once, not batched: the receiver starts comparing while the next file is hashed.
    try await inFlight.submitNow(link: link, channel: channel)
  }

  /// Opens offered file `index`, checking that it is still what was offered; also says whether
  /// it is sparse (fewer blocks allocated than its size needs).
  private func openOffered(_ index: Int) throws -> (fd: Int32, sparse: Bool) {
    let file = files[index]
    let path = urls[index].path
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw readFailure(index, "\(path): \(errnoText())") }
    // The offer told the receiver this size and time (and a resume relies on them): a file
    // changed since then would arrive as neither its old nor its new self.
    var status = stat()
    guard fstat(fd, &status) == 0, file.hasSizeAndTime(of: status) else {
      close(fd)
      throw readFailure(index, "\(path) changed after it was offered; send it again")
    }
    return (fd, Int64(status.st_blocks) * 512 < Int64(status.st_size))
  }

  private func send(
    _ index: Int, from offset: UInt64, channel: UInt32, inFlight: inout InFlight
  ) async throws {
    let file = files[index]
    if file.isStreamed {
      return try await sendStream(index, channel: channel, inFlight: &inFlight)
    }
    if file.isFolder {
      // An empty folder: nothing to read, only its FILE_END (the digest of no bytes).
      let digest = ContentHasher(state.withLock { $0.checksum }).finalize()
      return try await inFlight.add(
        [frame(.fileEnd(channel: channel, file: UInt32(index), digest: digest))], link: link,
        channel: channel)
    }
    let (fd, isSparse) = try openOffered(index)
    defer { close(fd) }
    let chunkSize = TransferMessage.maximumChunkSize
    let allocator = link.channel.allocator
    let (checksum, holes) = state.withLock { ($0.checksum, $0.holes) }
    let sparse = isSparse && holes
    let hasher = BackgroundHasher(ContentHasher(checksum), size: file.size, on: hashQueue)
    // A resumed prefix is read and hashed, not sent: the digest covers the whole file.
    try await hashPrefix(fd, upTo: offset, into: hasher, index: index)
    var position = offset
    // Where the data known to start at `position` ends: the whole file, unless it is sparse.
    var dataEnd = sparse ? offset : file.size
    var holesSent = false
    progress.advance(index, to: position, uncrossed: offset)
    state.withLock { $0.sent[index] = offset..<offset }
    repeat {
      if let failure = state.withLock({ $0.failure }) { throw failure }
      var frames: [WireFrame] = []
      var holeBytes: UInt64 = 0
      // A sparse file's holes go as HOLE frames (at most 1 GiB each, hashed as the zeros they
      // read as), its data as chunks that stop where the next hole starts.
      if position < file.size, position >= dataEnd {
        let (data, hole) = Self.nextData(fd, from: position, size: file.size)
        if data > position {
          let length = min(data - position, ResourceMessage.maximumHoleSize)
          frames.append(frame(.hole(channel: channel, file: UInt32(index), length: length)))
          await hasher.updateZeros(length)
          prefixRead.add(length, ordering: .relaxed)
          position += length
          holeBytes += length
          holesSent = true
        }
        dataEnd = position < data ? position : hole  // still in the hole: ask again
      }
      if position < dataEnd {
        let want = Int(min(UInt64(chunkSize), dataEnd - position))
        var buffer = allocator.buffer(capacity: 4 + want)
        buffer.writeInteger(UInt32(index))
        let count = try read(fd, into: &buffer, count: want, at: position, index: index)
        await hasher.update(buffer.getSlice(at: buffer.readerIndex + 4, length: count)!)
        position += UInt64(count)
        bytesSent.add(UInt64(count), ordering: .relaxed)
        frames.append(WireFrame(type: .chunk, channel: channel, payload: buffer))
      }
      if position == file.size {
        // Holes were never read: the file must still be the one offered (one that shrank
        // while it was sent would otherwise end in zeros it never held).
        if holesSent {
          var status = stat()
          guard fstat(fd, &status) == 0, file.hasSizeAndTime(of: status) else {
            throw readFailure(index, "\(urls[index].path) changed while it was being sent")
          }
        }
        let digest = await hasher.finalize()
        state.withLock { $0.digests[index] = digest }
        frames.append(frame(.fileEnd(channel: channel, file: UInt32(index), digest: digest)))
      }
      try await inFlight.add(frames, link: link, channel: channel)
      progress.advance(index, to: position, uncrossed: holeBytes)
      state.withLock { $0.sent[index] = offset..<position }
    } while position < file.size
  }

  /// Reads streamed file `index` to its end as it comes (a read waits on a thread of its own,
  /// ``StreamSource``), sending each piece as a CHUNK at once — a trickle is not held back to
  /// fill a batch — then its FILE_END with the digest of all of it. Its size was announced as
  /// 0 and is what was sent; it always starts at 0 (the receiver never resumes one).
  private func sendStream(_ index: Int, channel: UInt32, inFlight: inout InFlight) async throws {
    let source = StreamSource(url: urls[index])
    let cancelled = state.withLock { state in
      state.source = source
      return state.failure != nil
    }
    defer {
      source.close()
      state.withLock { $0.source = nil }
    }
    if cancelled { source.stop() }
    let checksum = state.withLock { $0.checksum }
    let hasher = BackgroundHasher(ContentHasher(checksum), size: .max, on: hashQueue)
    let allocator = link.channel.allocator
    var position: UInt64 = 0
    while true {
      if let failure = state.withLock({ $0.failure }) { throw failure }
      var buffer = allocator.buffer(capacity: 4 + TransferMessage.maximumChunkSize)
      buffer.writeInteger(UInt32(index))
      let read: StreamSource.Read
      do {
        read = try await source.read(
          upTo: TransferMessage.maximumChunkSize, allocator: allocator, idle: streamIdle)
      } catch let error as TransferError {
        if case .resource(.cannotRead(let local)) = error { throw readFailure(index, local) }
        throw error
      }
      if case .idle = read {
        // The writer is quiet: an empty CHUNK tells the receiver the offer is alive, and
        // this side's own watchdog that it waits for its input, not for the receiver.
        idleSent.add(1, ordering: .relaxed)
        try await inFlight.add(
          [WireFrame(type: .chunk, channel: channel, payload: buffer)], link: link,
          channel: channel)
        try await inFlight.submitNow(link: link, channel: channel)
        continue
      }
      guard case .bytes(var bytes) = read else { break }
      let count = bytes.readableBytes
      guard ResourceMessage.maximumFileSize - position >= UInt64(count) else {
        throw readFailure(index, "\(urls[index].path): longer than a file may be (2^62 bytes)")
      }
      await hasher.update(bytes)
      buffer.writeBuffer(&bytes)
      position += UInt64(count)
      bytesSent.add(UInt64(count), ordering: .relaxed)
      try await inFlight.add(
        [WireFrame(type: .chunk, channel: channel, payload: buffer)], link: link, channel: channel)
      try await inFlight.submitNow(link: link, channel: channel)
      progress.advance(index, to: position)
      state.withLock { $0.sent[index] = 0..<position }
    }
    let digest = await hasher.finalize()
    state.withLock { $0.digests[index] = digest }
    try await inFlight.add(
      [frame(.fileEnd(channel: channel, file: UInt32(index), digest: digest))], link: link,
      channel: channel)
    progress.advance(index, to: position)
  }

  /// How long a streamed file's writer may stay quiet before the offer is kept alive with an
  /// empty CHUNK: a quarter of the stall limit (15 s of the default 60 s), after which the
  /// receiver would end an offer it hears nothing of.
  private var streamIdle: Duration { stall / 4 }

  /// Holes shorter than this are read and sent as the zeros they hold: a frame per small hole,
  /// and chunks cut short at each, would cost more than the zeros.
  static let minimumHole: UInt64 = 1 << 20

  /// `message` encoded for the link (FILE_END and HOLE: small frames, copied once).
  private func frame(_ message: ResourceMessage) -> WireFrame {
    WireFrame(message.frame, allocator: link.channel.allocator)
  }

  /// Where the data at or after `position` starts, and where it ends (SEEK_DATA and
  /// SEEK_HOLE), holes shorter than ``minimumHole`` counted as data; both are `size` when only
  /// a hole is left, and a filesystem that cannot tell says all of it is data.
  static func nextData(_ fd: Int32, from position: UInt64, size: UInt64) -> (
    data: UInt64, hole: UInt64
  ) {
    /// The data at or after `offset`; nil when only a hole is left (or the file ends).
    func seekData(_ offset: UInt64) -> UInt64? {
      let found = ferry_seek_data(fd, off_t(offset))
      if found < 0 { return errno == ENXIO ? nil : offset }
      return min(UInt64(found), size)
    }
    guard size - position >= minimumHole, let first = seekData(position) else {
      return size - position >= minimumHole ? (size, size) : (position, size)
    }
    let data = first - position < minimumHole ? position : first
    var end = first
    while true {
      let hole = ferry_seek_hole(fd, off_t(end))
      // No hole found after the data (a race with a writer, or the end): data to the end.
      guard hole > off_t(end), UInt64(hole) < size else { return (data, size) }
      guard let next = seekData(UInt64(hole)) else {
        return size - UInt64(hole) >= minimumHole ? (data, UInt64(hole)) : (data, size)
      }
      if next - UInt64(hole) >= minimumHole { return (data, UInt64(hole)) }
      end = next
    }
  }

  /// Reads and hashes file `index`'s first `length` bytes (a resumed prefix, or a held file),
  /// counting them as progress of the sender's own (not stalled) but not as sent.
  private func hashPrefix(
    _ fd: Int32, upTo length: UInt64, into hasher: BackgroundHasher, index: Int
  ) async throws {
    let chunkSize = TransferMessage.maximumChunkSize
    var position: UInt64 = 0
    while position < length {
      if let failure = state.withLock({ $0.failure }) { throw failure }
      var buffer = link.channel.allocator.buffer(capacity: chunkSize)
      let want = Int(min(UInt64(chunkSize), length - position))
      let count = try read(fd, into: &buffer, count: want, at: position, index: index)
      await hasher.update(buffer)
      position += UInt64(count)
      prefixRead.add(UInt64(count), ordering: .relaxed)
    }
  }

  /// Reads exactly `count` bytes at `position` into `buffer`.
  private func read(
    _ fd: Int32, into buffer: inout ByteBuffer, count: Int, at position: UInt64, index: Int
  ) throws -> Int {
    let path = urls[index].path
    var readError: Int32 = 0
    let done = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
      var total = 0
      while total < count {
        let result = pread(
          fd, pointer.baseAddress! + total, count - total, off_t(position) + off_t(total))
        if result < 0 && errno == EINTR { continue }
        if result < 0 { readError = errno }
        if result <= 0 { break }
        total += result
      }
      return total
    }
    guard readError == 0 else {
      throw readFailure(index, "\(path): \(String(cString: strerror(readError)))")
    }
    guard done == count else {
      throw readFailure(index, "\(path) changed while it was being sent")
    }
    return done
  }

  /// The error for file `index` failing to be read here (`local` says why, with its local path),
  /// noting what the receiver will be told: the offered path only.
  private func readFailure(_ index: Int, _ local: String) -> TransferError {
    let offered = files[index].path
    state.withLock { $0.reasonForPeer = "the sender could not read \(offered)" }
    return .resource(.cannotRead(local))
  }

  /// Fails the offer when the receiver shows no progress — no credit taken up by new data, no
  /// answer, no acknowledgement (and this side is not busy reading a resumed prefix or a held
  /// file) — for ``ConnectionTimeouts/transferStall`` (and, before its answer, for
  /// ``ResourceOffer/decisionTimeout`` more): a receiver that keeps its link alive and does
  /// nothing would otherwise hold this send for ever. While held files wait for their answer,
  /// it waits as long again as this side took to hash them (the receiver hashes its own copies
  /// too): bounded by this side's own work, never by what the receiver claims. Ends when
  /// cancelled.
  private func watchForStall(channel: UInt32) async {
    func mark() -> UInt64 {
      bytesSent.load(ordering: .relaxed) &+ framesHeard.load(ordering: .relaxed)
        &+ prefixRead.load(ordering: .relaxed) &+ idleSent.load(ordering: .relaxed)
    }
    var seen = mark()
    var since = ContinuousClock.now
    while (try? await Task.sleep(for: stall / 4)) != nil {
      let now = mark()
      guard now == seen else {
        (seen, since) = (now, .now)
        continue
      }
      let (answered, comparing) = state.withLock { state in
        // Held files whose digest was sent and not yet answered: the receiver hashes them.
        let pending = state.hashTimes.filter {
          state.results[$0.key] == nil && !state.asked.contains($0.key)
        }
        return (state.offsets != nil, pending.values.reduce(Duration.zero, +))
      }
      let limit = (answered ? stall : ResourceOffer.decisionTimeout + stall) + comparing
      if ContinuousClock.now - since >= limit {
        fail(.stalled(limit))
        abandon(channel: channel, .stalled(limit))
        return
      }
    }
  }

  /// A frame from the receiver (on the loop).
  private func answered(_ frame: WireFrame) {
    framesHeard.add(1, ordering: .relaxed)
    switch frame.type {
    case .offerAccept:
      guard case .offerAccept(_, let offsets, let held)? = try? ResourceMessage(frame: frame.flat),
        offsets.count == files.count,
        zip(offsets, files).allSatisfy({ $0 == ResourceMessage.skip || $0 <= $1.size }),
        held.allSatisfy({ !files[Int($0)].isFolder && !files[Int($0)].isStreamed })
      else { return violation("the receiver answered the offer wrongly") }
      let (first, waiter) = state.withLock {
        state -> (Bool, CheckedContinuation<[UInt64], any Error>?) in
        guard state.offsets == nil else { return (false, nil) }
        state.offsets = offsets
        state.held = Set(held.map(Int.init))
        defer { state.acceptWaiter = nil }
        return (true, state.acceptWaiter)
      }
      guard first else {
        return violation("the receiver accepted the offer twice")
      }
      waiter?.resume(returning: offsets)
    case .fileAck:
      guard
        case .fileAck(_, let file, let status, let reason)? = try? ResourceMessage(
          frame: frame.flat),
        Int(file) < files.count
      else { return violation("the receiver acknowledged a file wrongly") }
      let index = Int(file)
      let (expected, final, wake) = state.withLock {
        state -> (Bool, Bool, (CheckedContinuation<[Int]?, any Error>, [Int]?)?) in
        // Only after the offer was accepted, once per file, and never for one it skipped;
        // "differs" only for a held file, once; "identical" only for a held file whose digest
        // was sent.
        guard let offsets = state.offsets, offsets[index] != ResourceMessage.skip,
          state.results[index] == nil
        else { return (false, false, nil) }
        if status == .identical, !state.held.contains(index) || state.digests[index] == nil {
          return (false, false, nil)
        }
        guard let verdict = FileStatus(status) else {
          guard state.held.contains(index), state.asked.insert(index).inserted else {
            return (false, false, nil)
          }
          state.resend.append(index)
          guard let waiter = state.doneWaiter else { return (true, false, nil) }
          state.doneWaiter = nil
          defer { state.resend = [] }
          return (true, false, (waiter, state.resend))
        }
        state.results[index] = FileResult(
          path: files[index].path, status: verdict, reason: reason,
          digest: state.digests[index] ?? [], checksum: state.checksum)
        guard state.results.count == files.count, let waiter = state.doneWaiter else {
          return (true, true, nil)
        }
        state.doneWaiter = nil
        return (true, true, (waiter, nil))
      }
      guard expected else {
        return violation("the receiver acknowledged file \(file) out of turn")
      }
      if final { progress.complete(index) }
      if let (waiter, resend) = wake { waiter.resume(returning: resend) }
    case .reset:
      var reason = ""
      if case .reset(_, _, let text)? = try? TransferMessage(frame: frame.flat) { reason = text }
      fail(.cancelledByPeer(reason: reason))
    default:
      break
    }
  }

  /// The receiver broke the offer's protocol: the transfer fails and the link closes (GOODBYE
  /// with `reason`), as for any other protocol violation.
  /// On the event loop (answers arrive there).
  private func violation(_ reason: String) {
    // The GOODBYE first, in this turn: failing wakes the application, whose own close (or
    // retry decision) must come after it.
    link.handlerOnLoop.closeForViolation(reason)
    fail(.peerDisconnected(reason: reason))
  }

  private func fail(_ error: TransferError) {
    let (first, accept, done, source) = state.withLock { state in
      let first = state.failure == nil
      if first { state.failure = error }
      defer {
        state.acceptWaiter = nil
        state.doneWaiter = nil
      }
      return (first, state.acceptWaiter, state.doneWaiter, state.source)
    }
    source?.stop()
    if first {
      let remote = link.channel.remoteAddress?.description ?? "?"
      FerryLogging.logger.info(
        "sending \(Quantity.count(files.count, "file")) to \(remote) stopped: \(error)")
    }
    accept?.resume(throwing: error)
    done?.resume(throwing: error)
  }

  private func abandon(channel: UInt32, _ error: TransferError) {
    switch error {
    case .cancelledByPeer, .peerDisconnected:
      link.onMultiplexer { $0.closeOffer(channel: channel) }
    default:
      let code: TransferMessage.ResetCode = error == .cancelled ? .cancelled : .failed
      let reason = state.withLock { $0.reasonForPeer } ?? Self.reasonForPeer(error)
      link.onMultiplexer {
        $0.answerOffer(TransferMessage.reset(channel: channel, code, reason: reason).frame)
        $0.closeOffer(channel: channel)
      }
    }
  }
}

extension OutgoingOffer {
  /// What the receiver is told about `error`, without anything local (paths) in it.
  static func reasonForPeer(_ error: TransferError) -> String {
    switch error {
    case .cancelled: return "the sender cancelled the transfer"
    case .resource(.cannotRead): return "the sender could not read a file"
    case .stalled(let duration):
      return "the sender saw no progress for \(duration.components.seconds) s"
    default: return "the sender failed"
    }
  }
}

/// Gathers a sender's frames into batches (many small files' frames travel in one hop to the
/// event loop and one flush, i.e. one TLS record and one write(2)), and bounds the batches
/// queued but not yet seen written.
private struct InFlight {
  static let limit = 8
  static let batchBytes = 256 << 10
  static let batchFrames = 128
  private var futures: [EventLoopFuture<Void>] = []
  private var batch: [WireFrame] = []
  private var bytes = 0

  mutating func add(_ frames: [WireFrame], link: ConnectionLink, channel: UInt32) async throws {
    batch += frames
    bytes += frames.reduce(0) { $0 + $1.payload.readableBytes }
    if bytes >= Self.batchBytes || batch.count >= Self.batchFrames {
      try await submit(link: link, channel: channel)
    }
  }

  /// Sends what is batched now, without waiting for it.
  mutating func submitNow(link: ConnectionLink, channel: UInt32) async throws {
    try await submit(link: link, channel: channel)
  }

  mutating func drain(link: ConnectionLink, channel: UInt32) async throws {
    try await submit(link: link, channel: channel)
    for future in futures { try await future.get() }
    futures = []
  }

  private mutating func submit(link: ConnectionLink, channel: UInt32) async throws {
    guard !batch.isEmpty else { return }
    let frames = batch
    batch = []
    bytes = 0
    futures.append(link.withMultiplexer { $0.sendResourceFrames(frames, channel: channel) })
    if futures.count > Self.limit {
      try await futures.removeFirst().get()
    }
  }
}
