/// Resource (file) transfer messages (docs/PROTOCOL.md, "Resources"). Pure.
package enum ResourceMessage: Hashable, Sendable {
  /// Files offered on `channel`, each to be checked with `digest` (encoded only when it is not
  /// SHA-256: an OFFER without the byte means SHA-256, as in versions 1 and 2).
  case offer(channel: UInt32, files: [OfferedFile], digest: DigestAlgorithm = .sha256)
  /// The offer is accepted; `offsets[i]` is where file `i` resumes (its size: nothing to send),
  /// or ``skip`` to leave it out. `held` lists (in increasing order) the files the destination
  /// already has with the offered size and modification time: for each, the sender first sends
  /// only its FILE_END, and the file itself only if the receiver answers ``FileStatus/differs``.
  case offerAccept(channel: UInt32, offsets: [UInt64], held: [UInt32] = [])
  /// Bytes of file `file`, continuing where the previous chunk (or its offset) ended.
  case chunk(channel: UInt32, file: UInt32, bytes: [UInt8])
  /// File `file` is complete; `digest` (16 or 32 bytes, the offer's algorithm) covers all its
  /// bytes, from the start.
  case fileEnd(channel: UInt32, file: UInt32, digest: [UInt8])
  /// The receiver's verdict on file `file`.
  case fileAck(channel: UInt32, file: UInt32, FileStatus, reason: String)
  /// The next `length` bytes of file `file` (continuing where its previous chunk or hole ended)
  /// are zeros the sender's filesystem does not store: sent as this, not as bytes. Version 3.
  case hole(channel: UInt32, file: UInt32, length: UInt64)

  /// The largest OFFER payload (16 MiB).
  package static let maximumOfferSize = 16 << 20
  /// The most files in one offer.
  package static let maximumFiles = 100_000
  /// The longest path in an offer, in bytes.
  package static let maximumPathSize = 4096
  /// The largest file an offer may announce (2^62 bytes: far beyond any disk, and small enough
  /// that sizes, their sums and every offset stay exact in a signed 64-bit integer).
  package static let maximumFileSize: UInt64 = 1 << 62
  /// The most bytes one offer may announce in all (2^62).
  package static let maximumOfferBytes: UInt64 = 1 << 62
  /// The modification times an offer may carry, in seconds from 1970: about ±8 700 years,
  /// within what `futimens(2)` and every filesystem accept.
  package static let modificationSecondsRange: ClosedRange<Int64> = -(1 << 38)...(1 << 38)
  /// The longest hole one HOLE frame may describe (1 GiB): the receiver hashes each in one go.
  package static let maximumHoleSize: UInt64 = 1 << 30
  /// The resume offset meaning "do not send this file".
  package static let skip = UInt64.max
  /// The payload bytes a receiver allows on an offer channel before any CREDIT (8 MiB).
  package static let initialWindow = 8 << 20

  /// The receiver's verdict on a file.
  package enum FileStatus: UInt8, Hashable, Sendable {
    /// Stored and verified.
    case stored = 0
    /// The digest did not match; nothing was kept.
    case corrupt = 1
    /// It could not be written (the reason says why); nothing was kept.
    case failed = 2
    /// Left out (the name was taken and the policy is skip).
    case skipped = 3
    /// Already there with the same content (a held file whose digest matched): nothing written.
    case identical = 4
    /// A held file whose digest did not match: not stored yet; send it whole.
    case differs = 5
  }

  /// The message as a frame.
  package var frame: Frame {
    var payload: [UInt8] = []
    switch self {
    case .offer(let channel, let files, let digest):
      payload.appendBigEndian(UInt32(files.count))
      for file in files {
        payload.appendBigEndian(UInt16(file.path.utf8.count))
        payload += file.path.utf8
        payload.appendBigEndian(file.size)
        payload.appendBigEndian(UInt64(bitPattern: file.modificationSeconds))
        payload.appendBigEndian(file.modificationNanoseconds)
        payload.appendBigEndian(file.mode)
      }
      if digest != .sha256 { payload.append(digest.rawValue) }
      return Frame(type: .offer, channel: channel, payload: payload)
    case .offerAccept(let channel, let offsets, let held):
      payload.appendBigEndian(UInt32(offsets.count))
      for offset in offsets { payload.appendBigEndian(offset) }
      if !held.isEmpty {
        payload.appendBigEndian(UInt32(held.count))
        for file in held { payload.appendBigEndian(file) }
      }
      return Frame(type: .offerAccept, channel: channel, payload: payload)
    case .chunk(let channel, let file, let bytes):
      payload.appendBigEndian(file)
      payload += bytes
      return Frame(type: .chunk, channel: channel, payload: payload)
    case .fileEnd(let channel, let file, let digest):
      payload.appendBigEndian(file)
      payload += digest
      return Frame(type: .fileEnd, channel: channel, payload: payload)
    case .fileAck(let channel, let file, let status, let reason):
      payload.appendBigEndian(file)
      payload.append(status.rawValue)
      payload.appendText(reason, maximumBytes: ControlMessage.maximumReasonSize)
      return Frame(type: .fileAck, channel: channel, payload: payload)
    case .hole(let channel, let file, let length):
      payload.appendBigEndian(file)
      payload.appendBigEndian(length)
      return Frame(type: .hole, channel: channel, payload: payload)
    }
  }

  /// Decodes a resource frame. Paths are only checked to be UTF-8 here; their safety is the
  /// receiver's ``RelativePath`` check.
  ///
  /// - Throws: ``WireError`` for channel 0, a count of 0 or over ``maximumFiles``, a path
  ///   over 4096 bytes or not UTF-8, a size over ``maximumFileSize`` or sizes adding up to more
  ///   than ``maximumOfferBytes``, a modification time outside ``modificationSecondsRange``,
  ///   nanoseconds over 999 999 999, a mode over 0o7777 (but for a folder or a streamed file of size 0), an unknown digest algorithm (or the
  ///   SHA-256 byte, which is never encoded), a digest not of 16 or 32 bytes, an unknown status, a hole of 0 bytes or over ``maximumHoleSize``, held files out of order, beyond the offer or not sent from 0, truncation or
  ///   trailing bytes.
  package init(frame: Frame) throws(WireError) {
    let type = frame.type
    guard frame.channel != 0 else { throw .invalidField(type, "channel 0") }
    var reader = ByteReader(frame.payload, type: type)
    switch type {
    case .offer:
      let count = Int(try reader.uint32())
      guard (1...Self.maximumFiles).contains(count) else {
        throw .invalidField(type, "file count \(count)")
      }
      var files: [OfferedFile] = []
      files.reserveCapacity(min(count, frame.payload.count / 26))
      var total: UInt64 = 0
      for _ in 0..<count {
        let length = Int(try reader.uint16())
        guard length <= Self.maximumPathSize else {
          throw .invalidField(type, "path length \(length)")
        }
        let path = try reader.utf8(count: length, field: "path")
        let size = try reader.uint64()
        let seconds = Int64(bitPattern: try reader.uint64())
        let nanoseconds = try reader.uint32()
        let mode = try reader.uint32()
        guard size <= Self.maximumFileSize else { throw .invalidField(type, "size \(size)") }
        total += size  // cannot overflow: both are at most 2^62
        guard total <= Self.maximumOfferBytes else { throw .invalidField(type, "total size") }
        guard Self.modificationSecondsRange.contains(seconds) else {
          throw .invalidField(type, "modification time \(seconds)")
        }
        guard nanoseconds < 1_000_000_000 else { throw .invalidField(type, "nanoseconds") }
        // Permission bits, and for an empty folder or a streamed file (both announced with
        // size 0) the folder or the stream bit.
        let kind = mode & ~0o7777
        guard
          kind == 0
            || (size == 0 && (kind == OfferedFile.folderBit || kind == OfferedFile.streamBit))
        else {
          throw .invalidField(type, "mode")
        }
        files.append(
          OfferedFile(
            path: path, size: size, modificationSeconds: seconds,
            modificationNanoseconds: nanoseconds, mode: mode))
      }
      // The digest byte is optional: an offer that ends after its files is checked with SHA-256.
      var digest = DigestAlgorithm.sha256
      if !reader.isAtEnd {
        let raw = try reader.uint8()
        guard let algorithm = DigestAlgorithm(rawValue: raw), algorithm != .sha256 else {
          throw .invalidField(type, "digest algorithm \(raw)")
        }
        digest = algorithm
      }
      self = .offer(channel: frame.channel, files: files, digest: digest)
    case .offerAccept:
      let count = Int(try reader.uint32())
      guard (1...Self.maximumFiles).contains(count) else {
        throw .invalidField(type, "file count \(count)")
      }
      var offsets: [UInt64] = []
      for _ in 0..<count { offsets.append(try reader.uint64()) }
      // The held files are optional: a payload that ends after the offsets holds none.
      var held: [UInt32] = []
      if !reader.isAtEnd {
        let heldCount = Int(try reader.uint32())
        guard (1...count).contains(heldCount) else {
          throw .invalidField(type, "held count \(heldCount)")
        }
        for _ in 0..<heldCount {
          let file = try reader.uint32()
          // In increasing order (so each once), within the offer, on a file sent from 0.
          guard Int(file) < count, held.last.map({ $0 < file }) ?? true, offsets[Int(file)] == 0
          else { throw .invalidField(type, "held file \(file)") }
          held.append(file)
        }
      }
      self = .offerAccept(channel: frame.channel, offsets: offsets, held: held)
    case .chunk:
      let file = try reader.uint32()
      self = .chunk(channel: frame.channel, file: file, bytes: Array(frame.payload.dropFirst(4)))
      return
    case .fileEnd:
      let file = try reader.uint32()
      let size = frame.payload.count - 4
      guard DigestAlgorithm.allCases.contains(where: { $0.size == size }) else {
        throw .invalidField(type, "digest of \(size) bytes")
      }
      self = .fileEnd(channel: frame.channel, file: file, digest: try reader.bytes(count: size))
    case .fileAck:
      let file = try reader.uint32()
      let raw = try reader.uint8()
      guard let status = FileStatus(rawValue: raw) else {
        throw .invalidField(type, "status \(raw)")
      }
      self = .fileAck(channel: frame.channel, file: file, status, reason: try reader.reason())
    case .hole:
      let file = try reader.uint32()
      let length = try reader.uint64()
      guard (1...Self.maximumHoleSize).contains(length) else {
        throw .invalidField(type, "hole of \(length) bytes")
      }
      self = .hole(channel: frame.channel, file: file, length: length)
    default:
      throw .unexpected(type)
    }
    try reader.finish()
  }
}
