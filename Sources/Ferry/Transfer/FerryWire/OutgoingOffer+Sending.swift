import CFerrySystem
internal import FerryWire
import Foundation
import NIOCore

/// Reading and sending each file of an ``OutgoingOffer``: a held file's digest alone, a file
/// from its offset (its holes as HOLEs), a streamed file as it comes. On the offer's task.
extension OutgoingOffer {
  /// Reads and hashes held file `index` and sends only its FILE_END: the receiver compares the
  /// digest with what it holds.
  func sendDigest(_ index: Int, channel: UInt32, inFlight: inout InFlight) async throws {
    let (fd, _) = try openOffered(index)
    defer { close(fd) }
    let hasher = BackgroundHasher(
      ContentHasher(state.withLock { $0.machine.checksum }), size: files[index].size,
      on: hashQueue)
    let started = ContinuousClock.now
    try await hashPrefix(fd, upTo: files[index].size, into: hasher, index: index)
    let digest = await hasher.finalize()
    let took = ContinuousClock.now - started
    state.withLock { $0.machine.computed(index, digest: digest, took: took) }
    try await inFlight.add(
      [frame(.fileEnd(channel: channel, file: UInt32(index), digest: digest))], link: link,
      channel: channel)
    // At once, not batched: the receiver starts comparing while the next file is hashed.
    try await inFlight.submitNow(link: link, channel: channel)
  }

  /// Opens offered file `index`, checking that it is still what was offered; also says whether
  /// it is sparse (fewer blocks allocated than its size needs).
  func openOffered(_ index: Int) throws -> (fd: Int32, sparse: Bool) {
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

  func send(
    _ index: Int, from offset: UInt64, channel: UInt32, inFlight: inout InFlight
  ) async throws {
    let file = files[index]
    if file.isStreamed {
      return try await sendStream(index, channel: channel, inFlight: &inFlight)
    }
    if file.isFolder {
      // An empty folder: nothing to read, only its FILE_END (the digest of no bytes).
      let digest = ContentHasher(state.withLock { $0.machine.checksum }).finalize()
      return try await inFlight.add(
        [frame(.fileEnd(channel: channel, file: UInt32(index), digest: digest))], link: link,
        channel: channel)
    }
    let (fd, isSparse) = try openOffered(index)
    defer { close(fd) }
    let chunkSize = TransferMessage.maximumChunkSize
    let allocator = link.channel.allocator
    let (checksum, holes) = state.withLock { ($0.machine.checksum, $0.machine.holes) }
    let sparse = isSparse && holes
    let hasher = BackgroundHasher(ContentHasher(checksum), size: file.size, on: hashQueue)
    // A resumed prefix is read and hashed, not sent: the digest covers the whole file.
    try await hashPrefix(fd, upTo: offset, into: hasher, index: index)
    var position = offset
    // Where the data known to start at `position` ends: the whole file, unless it is sparse.
    var dataEnd = sparse ? offset : file.size
    var holesSent = false
    progress.advance(index, to: position, uncrossed: offset)
    state.withLock { $0.machine.sent(index, offset..<offset) }
    repeat {
      if let failure = state.withLock({ $0.machine.failure }) { throw failure }
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
        state.withLock { $0.machine.computed(index, digest: digest) }
        frames.append(frame(.fileEnd(channel: channel, file: UInt32(index), digest: digest)))
      }
      try await inFlight.add(frames, link: link, channel: channel)
      progress.advance(index, to: position, uncrossed: holeBytes)
      state.withLock { $0.machine.sent(index, offset..<position) }
    } while position < file.size
  }

  /// Reads streamed file `index` to its end as it comes (a read waits on a thread of its own,
  /// ``StreamSource``), sending each piece as a CHUNK at once — a trickle is not held back to
  /// fill a batch — then its FILE_END with the digest of all of it. Its size was announced as
  /// 0 and is what was sent; it always starts at 0 (the receiver never resumes one).
  func sendStream(_ index: Int, channel: UInt32, inFlight: inout InFlight) async throws {
    let source = StreamSource(url: urls[index])
    let cancelled = state.withLock { state in
      state.source = source
      return state.machine.failure != nil
    }
    defer {
      source.close()
      state.withLock { $0.source = nil }
    }
    if cancelled { source.stop() }
    let checksum = state.withLock { $0.machine.checksum }
    let hasher = BackgroundHasher(ContentHasher(checksum), size: .max, on: hashQueue)
    let allocator = link.channel.allocator
    var position: UInt64 = 0
    while true {
      if let failure = state.withLock({ $0.machine.failure }) { throw failure }
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
      // What was read from the stream (bytes, or its end) is gone from it: said before the
      // link may drop under the frame that carries it, so that a retry never offers the rest
      // as the whole, nor waits for an end that was read already.
      if position == 0 { state.withLock { $0.machine.sent(index, 0..<0) } }
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
      state.withLock { $0.machine.sent(index, 0..<position) }
    }
    let digest = await hasher.finalize()
    state.withLock { $0.machine.computed(index, digest: digest) }
    try await inFlight.add(
      [frame(.fileEnd(channel: channel, file: UInt32(index), digest: digest))], link: link,
      channel: channel)
    progress.advance(index, to: position)
  }

  /// How long a streamed file's writer may stay quiet before the offer is kept alive with an
  /// empty CHUNK: a quarter of the stall limit (15 s of the default 60 s), after which the
  /// receiver would end an offer it hears nothing of.
  var streamIdle: Duration { stall / 4 }

  /// Holes shorter than this are read and sent as the zeros they hold: a frame per small hole,
  /// and chunks cut short at each, would cost more than the zeros.
  static let minimumHole: UInt64 = 1 << 20

  /// `message` encoded for the link (FILE_END and HOLE: small frames, copied once).
  func frame(_ message: ResourceMessage) -> WireFrame {
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
  func hashPrefix(
    _ fd: Int32, upTo length: UInt64, into hasher: BackgroundHasher, index: Int
  ) async throws {
    let chunkSize = TransferMessage.maximumChunkSize
    var position: UInt64 = 0
    while position < length {
      if let failure = state.withLock({ $0.machine.failure }) { throw failure }
      var buffer = link.channel.allocator.buffer(capacity: chunkSize)
      let want = Int(min(UInt64(chunkSize), length - position))
      let count = try read(fd, into: &buffer, count: want, at: position, index: index)
      await hasher.update(buffer)
      position += UInt64(count)
      prefixRead.add(UInt64(count), ordering: .relaxed)
    }
  }

  /// Reads exactly `count` bytes at `position` into `buffer`.
  func read(
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
  func readFailure(_ index: Int, _ local: String) -> TransferError {
    let offered = files[index].path
    state.withLock { $0.machine.reasonForPeer = "the sender could not read \(offered)" }
    return .resource(.cannotRead(local))
  }
}
