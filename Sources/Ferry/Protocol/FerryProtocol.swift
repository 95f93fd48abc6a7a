internal import FerryWire

/// What identifies the Ferry protocol to other programs (docs/PROTOCOL.md): the version this
/// build speaks and the TLS ALPN name. Defined once in the wire layer.
public enum FerryProtocol {
  /// The protocol version this build speaks, published as the `v` TXT record and offered in
  /// `HELLO`.
  public static let version = WireProtocol.version
  /// Every protocol version this build can speak, highest first.
  public static let supportedVersions: [Int] = WireProtocol.supportedVersions.map(Int.init)
  /// The TLS ALPN identifier of the protocol (`ferry/1`); it stays the same across versions.
  public static let alpn = WireProtocol.alpn
}
