/// Constants of the Ferry wire protocol that other layers need to agree on (docs/PROTOCOL.md).
package enum WireProtocol {
  /// The protocol version this build speaks, published as the `v` TXT record and offered in
  /// `HELLO`.
  package static let version = 1

  /// Every protocol version this build can speak, highest first.
  package static let supportedVersions: [UInt16] = [1]

  /// The TLS ALPN identifier of the protocol. It names the protocol family and stays the same
  /// across versions (versions are agreed in `HELLO`); an inviter refuses a server that does not
  /// select it.
  package static let alpn = "ferry/1"

  /// Picks the version both sides speak: the highest in both lists, or nil when there is none.
  package static func negotiate(ours: [UInt16], theirs: [UInt16]) -> UInt16? {
    Set(ours).intersection(theirs).max()
  }
}
