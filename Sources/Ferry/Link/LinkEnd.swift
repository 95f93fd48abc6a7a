internal import FerryWire

/// Why a peer's link ended (``PeerStateChange/end``), typed: whether it was closed on purpose —
/// by either end, for a reason — or lost, and whether another link between the same two peers
/// took its place. Only a lost link is worth connecting again.
public enum LinkEnd: Hashable, Sendable, CustomStringConvertible {
  /// Another link between the same two peers took its place (a newer connection, or both
  /// peers invited each other and the other link stays): the peer stays connected by that
  /// one. `words`: as this side or the peer said it.
  case superseded(words: String)
  /// The peer closed it (GOODBYE), with `words` (escaped).
  case closedByPeer(words: String)
  /// This side closed it (``Session/disconnect(_:)``, ``Session/close()``), saying `words`.
  case closedHere(words: String)
  /// Either end broke the protocol or one of the link's limits, as `words` say.
  case violation(words: String)
  /// No sign of life from the peer for this long.
  case timedOut(Duration)
  /// The connection went away: reset, closed without a TLS close, closed under it (`words`).
  case lost(words: String)

  /// Whether an end closed the link on purpose (a GOODBYE, a violation, a superseded link),
  /// rather than losing it.
  public var isOnPurpose: Bool {
    switch self {
    case .superseded, .closedByPeer, .closedHere, .violation: true
    case .timedOut, .lost: false
    }
  }

  /// Whether another link between the same two peers took its place.
  public var isSuperseded: Bool {
    if case .superseded = self { return true }
    return false
  }

  /// Why, in words for people.
  public var description: String {
    switch self {
    case .superseded(let words), .closedByPeer(let words), .closedHere(let words),
      .violation(let words), .lost(let words):
      return words
    case .timedOut(let silence):
      return
        "the link timed out (no sign of life from the peer for \(silence.components.seconds) s)"
    }
  }

  /// What a GOODBYE of `code` with `reason` from the peer says. A peer of version 4 says a
  /// superseded link in words only (code 0): those words are still understood.
  static func goodbye(_ code: ControlMessage.GoodbyeCode, reason: String) -> LinkEnd {
    let words =
      reason.isEmpty
      ? "the peer closed the connection"
      : "the peer closed the connection: \(DisplayText.escaping(reason))"
    if code == .superseded
      || (code == .normal && Supersession.allCases.contains { $0.words == reason })
    {
      return .superseded(words: words)
    }
    return .closedByPeer(words: words)
  }
}

/// How a link between two peers gives way to another one between the same two (the GOODBYE
/// code `superseded`, with these words).
enum Supersession: CaseIterable, Sendable {
  /// A newer connection to the same peer replaces it (both ends keep the newer link).
  case replaced
  /// Both peers invited each other: this accepted link goes, the one this end invited stays.
  case crossed
  /// Both peers invited each other: this invited link goes, the peer's stays.
  case keptPeersLink

  /// What the GOODBYE says.
  var words: String {
    switch self {
    case .replaced: "replaced by a new connection"
    case .crossed: "connected already, by this end's invitation"
    case .keptPeersLink: "connected already, by the peer's invitation"
    }
  }
}
