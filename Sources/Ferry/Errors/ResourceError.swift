/// Why a resource (file) could not be received or sent.
public enum ResourceError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A path offered by the peer is not safe to create under the destination.
  case unsafePath(PathError)
  /// Something in the destination (a symlink, a file where a directory is needed) would lead
  /// outside it.
  case unsafeDestination(String)
  /// A file cannot be read, created or written; the reason is the system's.
  case cannotWrite(String)
  /// The destination's filesystem has no room for the offer.
  case insufficientSpace(needed: Int64, available: Int64)
  /// The received bytes do not hash to what the sender computed.
  case integrityCheckFailed(path: String)
  /// The offer has more files than allowed, or none at all (0).
  case tooManyFiles(Int)
  /// A file, or the offer in all, is larger than the protocol allows (2^62 bytes).
  case tooLarge(String)
  /// The source file cannot be read.
  case cannotRead(String)
  /// The peer speaks a protocol version without something this offer needs: named here
  /// (streamed files need version 5).
  case unsupportedByPeer(String)
  /// A streamed item (``ResourceItem/isStreamed``) was being read when its transfer broke off:
  /// what was read is gone, so it cannot be resumed or sent again.
  case streamInterrupted(path: String)

  /// A message for users.
  public var description: String {
    switch self {
    case .unsafePath(let error): return error.description
    case .unsafeDestination(let what): return "unsafe destination: \(what)"
    case .cannotWrite(let reason): return "cannot write \(reason)"
    case .insufficientSpace(let needed, let available):
      return
        "not enough space: \(Quantity.bytes(UInt64(max(0, needed)))) needed, "
        + "\(Quantity.bytes(UInt64(max(0, available)))) free"
    case .integrityCheckFailed(let path):
      return "\(path): the received data is corrupt (digest mismatch)"
    case .tooManyFiles(0):
      return "nothing to offer: no files"
    case .tooManyFiles(let count):
      return "the offer has \(count) files; the limit is \(ProtocolLimits.maximumFilesPerOffer)"
    case .cannotRead(let reason): return "cannot read \(reason)"
    case .unsupportedByPeer(let what):
      return "the receiver's Ferry is too old for \(what): update it there"
    case .streamInterrupted(let path):
      return
        "\(path) was read as it came and the transfer broke off: it cannot be resumed or sent "
        + "again"
    case .tooLarge(let what):
      return
        "\(what) is larger than \(Quantity.bytes(ProtocolLimits.maximumOfferBytes)), the most one "
        + "offer carries"
    }
  }
}
