import Dispatch
internal import FerryWire
import NIOCore
import NIOPosix
import Synchronization

/// Who is in the session: room for a link, adopting a link whose handshake completed, its end,
/// and what each peer's state changes say.
extension Session {
  /// Whether a link to `peer` fits: a peer already connected reconnects in its own place (its
  /// new link replaces the old, which may not have noticed it is dead yet).
  func hasRoom(for peer: Fingerprint?) -> Bool {
    members.withLock { members in
      if let peer, members.links[peer] != nil { return true }
      return members.links.count + 1 < Self.maximumPeers
    }
  }

  /// What became of a link whose handshake completed.
  enum Adoption {
    /// It is the peer's link now (any older one is disconnected).
    case adopted
    /// The peer is connected already by the link both ends keep when they invited each other
    /// at once; this one was closed.
    case alreadyConnected
    /// The session is full; the link was closed.
    case full
    /// Only for a link the peer invited, when `mayWait`: this end is inviting the same peer,
    /// and its own invitation is the one both ends keep if it is accepted. Nothing changed:
    /// adopt again (without waiting) once
    /// ``SessionConnector/invitationsSettled(to:until:in:wake:)`` returns.
    case settling
    /// The session was closed; the caller closes the link.
    case closed
  }

  /// Adds a link whose handshake just completed; on the link's event loop. `invitedHere`:
  /// this end invited it. On `.full` the caller closes the link (declining, as advertiser). How
  /// a reconnecting peer's link, and two links invited at once, are settled:
  /// ``SessionConnector/adopt(_:link:handler:invitedHere:mayWait:into:)``.
  func adopt(
    _ peer: PeerID, link: ConnectionLink, handler: ConnectionHandler, invitedHere: Bool,
    mayWait: Bool = false
  ) -> Adoption {
    connector.adopt(
      peer, link: link, handler: handler, invitedHere: invitedHere, mayWait: mayWait, into: self)
  }

  func report(_ peer: PeerID, _ state: PeerState, end: LinkEnd? = nil) {
    continuation.yield(PeerStateChange(peer: peer, state: state, end: end))
  }

  /// Reports a second link's progress only while the peer has no link: a peer connected by
  /// one link is not "connecting" or "not connected" because another was tried.
  func reportUnlessConnected(_ peer: PeerID, _ state: PeerState, end: LinkEnd? = nil) {
    // Checked and said under one lock: an adoption cannot slip in between.
    members.withLock { members in
      if members.links[peer.fingerprint] == nil { report(peer, state, end: end) }
    }
  }

  /// Why `peer`'s last link ended, while it has no link (nil: it has one, or never had).
  func lastLinkEnd(of peer: PeerID) -> LinkEnd? {
    members.withLock { $0.ended[peer.fingerprint] }
  }

  /// `peer`'s link `link` ended, for `end` (``SessionConnector`` hands it over on adopting it).
  func linkEnded(_ peer: PeerID, link: ConnectionLink, end: LinkEnd) {
    // Removed, its end kept and said under one lock, so that a new link's connected cannot
    // come first, and a retrying send that finds the peer gone finds why too.
    members.withLock { members in
      guard members.links[peer.fingerprint]?.link === link else { return }
      members.remove(peer.fingerprint, ended: end)
      continuation.yield(PeerStateChange(peer: peer, state: .notConnected, end: end))
    }
  }
}
