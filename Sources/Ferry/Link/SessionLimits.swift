/// What one connected peer may make this side hold: each limit bounds memory, descriptors or
/// work a peer can cause, even a peer that was accepted. Exceeding one closes that peer's link
/// with GOODBYE (protocol error) and a logged reason; the session, its other links and the
/// process go on.
public struct SessionLimits: Hashable, Sendable {
  /// Streams a peer may have open towards this side at once.
  public var maximumIncomingStreams = 16
  /// Bytes a peer's messages and streams may have waiting, received but not yet read by the
  /// application (each stream's 1 MiB window and the messages' 4 MiB window bound what is in
  /// flight; this also bounds streams that ended but were never read). Each message or chunk
  /// counts 128 bytes more than its size, so that a flood of empty ones is bounded too.
  public var maximumUnreadBytes = 32 << 20
  /// Offers a peer may have open towards this side at once (waiting for a decision, or being
  /// received).
  public var maximumIncomingOffers = 8
  /// Files in a peer's open offers, together.
  public var maximumFilesInFlight = 100_000
  /// Replies (each batch of PONG, CREDIT, FILE_ACK, RESET … frames written at once) that may wait
  /// to be written because the peer is not reading what this side sends. Each pins a TLS record
  /// buffer of about 16 KiB until it is written.
  public var maximumQueuedReplies = 1024

  /// The defaults: 16 streams, 32 MiB unread, 8 offers, 100 000 files in flight, 1 024 replies
  /// waiting.
  public init() {}

  /// The most peers a session holds, this one included (``Session/maximumPeers``): defined here,
  /// below the session, so that the link's own words (``InvitationError``) can name it.
  static let maximumPeers = 8

  /// What one unread message or stream chunk counts against ``maximumUnreadBytes`` besides its
  /// bytes: what holding it costs, so that empty ones are not free.
  static let unreadElementCost = 128

  /// What `bytes` of one unread message or chunk count against ``maximumUnreadBytes``.
  static func unreadCost(_ bytes: Int) -> Int { bytes + unreadElementCost }
}

/// Why a link was closed for exceeding one of its limits (``SessionLimits``, the handshake's
/// caps): the text says which, and travels in the GOODBYE.
struct LinkLimitExceeded: Error, CustomStringConvertible {
  /// What was exceeded.
  let description: String

  init(_ what: String) {
    description = "limit exceeded: \(what)"
  }
}

/// A peer broke the protocol on a connected link: the reason travels in the GOODBYE.
struct LinkViolation: Error, CustomStringConvertible {
  /// What the peer did.
  let description: String
}
