/// Constants of the Ferry wire protocol that other layers need to agree on (docs/PROTOCOL.md).
package enum WireProtocol {
  /// The protocol version this build speaks, published as the `v` TXT record and offered in
  /// `HELLO`.
  package static let version = 5

  /// Every protocol version this build can speak, highest first: versions 5 and 4. Version 2
  /// added held files (OFFER_ACCEPT's held section, FILE_ACK `identical` and `differs`), version
  /// 3 the sender's choice of digest (OFFER's digest byte, XXH3-128) and holes (HOLE), version
  /// 4 the per-connection verification code (COMMIT, INVITE's nonce, REVEAL:
  /// docs/PROTOCOL.md §6), and version 5 streamed files (an OFFER entry whose size is known
  /// only at its end). Versions 1 to 3 are refused (GOODBYE code 2), not spoken: their code
  /// depends on the two fingerprints alone, which a man in the middle can grind keys to match,
  /// so a peer offering only those could always avoid the new code.
  package static let supportedVersions: [UInt16] = [5, 4]

  /// The first version with held files.
  package static let heldFilesVersion: UInt16 = 2

  /// The first version whose OFFER may name a digest other than SHA-256, and whose senders may
  /// send HOLE frames for sparse files.
  package static let digestChoiceVersion: UInt16 = 3

  /// The first version whose verification code is derived per connection, from the TLS
  /// exporter and both ends' nonces (COMMIT, INVITE's nonce, REVEAL). The oldest this build
  /// speaks.
  package static let verificationNonceVersion: UInt16 = 4

  /// The first version whose OFFER may hold streamed files (``OfferedFile/streamBit``).
  package static let streamedFilesVersion: UInt16 = 5

  /// The TLS ALPN identifier of the protocol. It names the protocol family and stays the same
  /// across versions (versions are agreed in `HELLO`); an inviter refuses a server that does not
  /// select it.
  package static let alpn = "ferry/1"

  /// Picks the version both sides speak: the highest in both lists, or nil when there is none.
  package static func negotiate(ours: [UInt16], theirs: [UInt16]) -> UInt16? {
    Set(ours).intersection(theirs).max()
  }
}
