/// Constants of the Ferry wire protocol that other layers need to agree on (docs/PROTOCOL.md).
package enum WireProtocol {
  /// The protocol version this build speaks, published as the `v` TXT record and offered in
  /// `HELLO`.
  package static let version = 3

  /// Every protocol version this build can speak, highest first. Version 2 adds held files
  /// (OFFER_ACCEPT's held section, FILE_ACK `identical` and `differs`); a receiver uses them
  /// only with a peer that agreed on version 2. Version 3 adds the sender's choice of digest
  /// (OFFER's digest byte, XXH3-128) and holes (HOLE: sparse files stay sparse).
  package static let supportedVersions: [UInt16] = [3, 2, 1]

  /// The first version with held files.
  package static let heldFilesVersion: UInt16 = 2

  /// The first version whose OFFER may name a digest other than SHA-256, and whose senders may
  /// send HOLE frames for sparse files.
  package static let digestChoiceVersion: UInt16 = 3

  /// The TLS ALPN identifier of the protocol. It names the protocol family and stays the same
  /// across versions (versions are agreed in `HELLO`); an inviter refuses a server that does not
  /// select it.
  package static let alpn = "ferry/1"

  /// Picks the version both sides speak: the highest in both lists, or nil when there is none.
  package static func negotiate(ours: [UInt16], theirs: [UInt16]) -> UInt16? {
    Set(ours).intersection(theirs).max()
  }
}
