internal import FerryWire

// The core's words in the Ferry wire's terms and back: every mapping between the transfer core
// (Transfer/) and FerryWire lives here, in the wire's front end. Pure values: any thread.

extension TransferFile {
  /// The core's entry for an OFFER's file: its kind from the mode's kind bits (the decoder
  /// admits only none, ``OfferedFile/folderBit`` or ``OfferedFile/streamBit``), its
  /// permissions from the rest.
  init(_ wire: OfferedFile) {
    let kind: Kind = wire.isFolder ? .folder : wire.isStreamed ? .stream : .file
    self.init(
      path: wire.path, size: wire.size, modificationSeconds: wire.modificationSeconds,
      modificationNanoseconds: wire.modificationNanoseconds, permissions: wire.mode & 0o7777,
      kind: kind)
  }

  /// The entry as an OFFER carries it: the permissions with the kind's mode bit.
  var wire: OfferedFile {
    let kindBit: UInt32
    switch kind {
    case .file: kindBit = 0
    case .folder: kindBit = OfferedFile.folderBit
    case .stream: kindBit = OfferedFile.streamBit
    }
    return OfferedFile(
      path: path, size: size, modificationSeconds: modificationSeconds,
      modificationNanoseconds: modificationNanoseconds, mode: permissions | kindBit)
  }
}

extension FileStart {
  /// The starts an OFFER_ACCEPT says: a held file (listed in `held`) is `.held`, an offset of
  /// ``ResourceMessage/skip`` `.skip`, any other offset `.from` it. A held index beyond the
  /// offsets (the decoder refuses one) is ignored.
  static func starts(offsets: [UInt64], held: [UInt32]) -> [FileStart] {
    var starts = offsets.map { $0 == ResourceMessage.skip ? FileStart.skip : .from($0) }
    for index in held where Int(index) < starts.count { starts[Int(index)] = .held }
    return starts
  }

  /// The OFFER_ACCEPT for `starts`: each file's offset (``ResourceMessage/skip``: left out; a
  /// held file: 0) and the held files, in increasing order.
  static func wire(_ starts: [FileStart]) -> (offsets: [UInt64], held: [UInt32]) {
    var offsets: [UInt64] = []
    offsets.reserveCapacity(starts.count)
    var held: [UInt32] = []
    for (index, start) in starts.enumerated() {
      switch start {
      case .skip: offsets.append(ResourceMessage.skip)
      case .from(let offset): offsets.append(offset)
      case .held:
        offsets.append(0)
        held.append(UInt32(index))
      }
    }
    return (offsets, held)
  }
}

extension FileVerdict {
  /// The verdict a FILE_ACK carries.
  init(_ wire: ResourceMessage.FileStatus) {
    switch wire {
    case .stored: self = .stored
    case .corrupt: self = .corrupt
    case .failed: self = .failed
    case .skipped: self = .skipped
    case .identical: self = .identical
    case .differs: self = .differs
    }
  }
}

extension ResourceMessage.FileStatus {
  /// The FILE_ACK status for `verdict`.
  init(_ verdict: FileVerdict) {
    switch verdict {
    case .stored: self = .stored
    case .corrupt: self = .corrupt
    case .failed: self = .failed
    case .skipped: self = .skipped
    case .identical: self = .identical
    case .differs: self = .differs
    }
  }
}

extension TransferMessage.ResetCode {
  /// The RESET code that says why an incoming offer ends: `refused` when it was declined or
  /// refused, `cancelled` when it was cancelled, `failed` when it stopped otherwise. Also the
  /// sender's code for its own failure (``OfferEnd/stopped(_:)``).
  init(_ end: OfferEnd) {
    switch end {
    case .declined, .refused: self = .refused
    case .stopped(let error): self = error == .cancelled ? .cancelled : .failed
    }
  }
}

extension ChecksumAlgorithm {
  /// The digest an OFFER names for this algorithm.
  var wire: DigestAlgorithm {
    switch self {
    case .xxh3: return .xxh3
    case .sha256: return .sha256
    }
  }

  /// The algorithm an OFFER's digest names.
  init(_ wire: DigestAlgorithm) {
    switch wire {
    case .xxh3: self = .xxh3
    case .sha256: self = .sha256
    }
  }
}
