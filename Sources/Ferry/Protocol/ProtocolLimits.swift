internal import FerryWire

/// The limits of the Ferry protocol that applications meet (docs/PROTOCOL.md): what one message,
/// stream name, invitation context or offer may carry. Each value is the protocol's own, defined
/// once in the wire layer; a peer that goes beyond one of them is refused.
public enum ProtocolLimits {
  /// The most bytes one data message carries (1 MiB).
  public static let maximumMessageSize = TransferMessage.maximumMessageSize
  /// The most UTF-8 bytes a stream name has (1024).
  public static let maximumStreamNameSize = TransferMessage.maximumNameSize
  /// The most bytes an invitation's context carries (64 KiB).
  public static let maximumContextSize = ControlMessage.maximumContextSize
  /// The most files one offer carries (100 000).
  public static let maximumFilesPerOffer = ResourceMessage.maximumFiles
  /// The most UTF-8 bytes an offered file's relative path has (4096).
  public static let maximumPathSize = ResourceMessage.maximumPathSize
  /// The most bytes one file, and one offer in all, may hold (2^62).
  public static let maximumOfferBytes = ResourceMessage.maximumOfferBytes
}

extension ProtocolLimits {
  /// The largest file an offer may announce (2^62 bytes): what a staged file may grow to.
  /// Internal: the transfer core's word for the wire's limit.
  static let maximumFileSize = ResourceMessage.maximumFileSize
}
