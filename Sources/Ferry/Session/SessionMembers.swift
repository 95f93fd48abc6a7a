/// The peers a ``Session`` is connected to, by fingerprint, and the invitations this end is
/// making to peers it knows by fingerprint: kept under one lock, so that adopting a peer's
/// link and starting an invitation to that peer happen in one order (``Session`` `adopt`).
/// A value: the session keeps it in a `Mutex`.
struct SessionMembers {
  /// One connected peer: its link and what was agreed on it.
  struct Member {
    let peer: PeerID
    let link: ConnectionLink
    /// Whether this end invited (rather than accepted) the link.
    let invitedHere: Bool
    /// The protocol version agreed on the link.
    let version: UInt16
    /// The link's verification code.
    let verificationCode: VerificationCode?
  }

  /// The connected peers.
  private(set) var links: [Fingerprint: Member] = [:]
  /// Why each peer's last link ended, while it has none; bounded: at most ``maximumEnded``
  /// (the oldest knowledge goes first).
  private(set) var ended: [Fingerprint: LinkEnd] = [:]
  /// The most ended links remembered.
  static let maximumEnded = 1024

  /// `member` is `peer`'s link now.
  mutating func add(_ member: Member) {
    links[member.peer.fingerprint] = member
    ended[member.peer.fingerprint] = nil
  }

  /// `peer`'s link ended, for `end`.
  mutating func remove(_ peer: Fingerprint, ended end: LinkEnd) {
    links[peer] = nil
    if ended.count >= Self.maximumEnded { ended.removeAll() }
    ended[peer] = end
  }
  /// This end's invitations under way, by the fingerprint they require; bounded by the
  /// application's own calls, each of which ends within its timeout.
  private var inviting: [Fingerprint: Int] = [:]
  /// Accepts of a peer's invitation waiting for this end's own invitations to that peer to
  /// end, by the number of their wait: each also ends before the held invitation expires, when
  /// it is withdrawn, when its task is cancelled and when the session closes; at most one per
  /// invitation the advertiser holds pending.
  private var settling:
    [Fingerprint: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)]] =
      [:]

  /// Whether this end has an invitation to `peer` under way.
  func isInviting(_ peer: Fingerprint) -> Bool { inviting[peer] != nil }

  /// An invitation to `peer` began.
  mutating func beganInviting(_ peer: Fingerprint) {
    inviting[peer, default: 0] += 1
  }

  /// An invitation to `peer` ended; returns the accepts to resume (outside the lock) when it
  /// was the last one.
  mutating func endedInviting(_ peer: Fingerprint) -> [CheckedContinuation<Void, Never>] {
    let left = inviting[peer, default: 1] - 1
    guard left == 0 else {
      inviting[peer] = left
      return []
    }
    inviting[peer] = nil
    return (settling.removeValue(forKey: peer) ?? []).map(\.continuation)
  }

  /// Keeps `continuation` (wait number `id`) until no invitation to `peer` is under way; false
  /// (keeping nothing) when none is now.
  mutating func settle(
    _ peer: Fingerprint, id: UInt64, _ continuation: CheckedContinuation<Void, Never>
  ) -> Bool {
    guard isInviting(peer) else { return false }
    settling[peer, default: []].append((id, continuation))
    return true
  }

  /// Ends wait `id` early: its continuation, to resume outside the lock, if it still waits.
  mutating func stopSettling(_ peer: Fingerprint, id: UInt64) -> CheckedContinuation<Void, Never>? {
    guard let index = settling[peer]?.firstIndex(where: { $0.id == id }) else { return nil }
    let waiter = settling[peer]?.remove(at: index)
    if settling[peer]?.isEmpty == true { settling[peer] = nil }
    return waiter?.continuation
  }

  /// Ends every wait (the session closed): their continuations, to resume outside the lock.
  mutating func stopAllSettling() -> [CheckedContinuation<Void, Never>] {
    defer { settling = [:] }
    return settling.values.flatMap { $0.map(\.continuation) }
  }
}
