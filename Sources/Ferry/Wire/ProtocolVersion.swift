/// Constants of the Ferry wire protocol that other layers need to agree on.
public enum FerryProtocol {
  /// The protocol version this build speaks, published as the `v` TXT record and negotiated in the
  /// session handshake (docs/PROTOCOL.md).
  public static let version = 1
}
