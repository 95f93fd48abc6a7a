import Ferry
import FerryLocalSend

/// What only the person sending can decide: whether to send to a receiver whose name is
/// trusted with another key, and whether a browser may download what a web link shares. The
/// terminal's prompt is one (a script's answer: no), a daemon's API could be another. Called
/// from the send's tasks, any thread.
public protocol SendDecider: Sendable {
  /// Whether to send to `peer` anyway: its name is trusted with another key (`previous`), or
  /// looks like a trusted name (the warning was reported: ``SendEvent/keyChanged(_:status:previous:)``).
  /// At most `timeout`.
  func sendDespiteKeyChange(to peer: PeerID, previous: Fingerprint, timeout: Duration) async
    -> Bool
  /// Whether the browser of `request` may download the shared files (by the deadline: no
  /// answer is no).
  func admit(_ request: WebShareServer.Request, until deadline: ContinuousClock.Instant) async
    -> Bool
}

/// The sender's side of "a trusted name with another key is never silent": before files go
/// to a receiver whose name is pinned to another fingerprint (a trusted peer's name, or one
/// that looks like it), the warning is reported and the ``SendDecider`` asked; without a yes
/// nothing is sent — unless the receiver was named by this very fingerprint. Receivers that
/// accept are remembered (trust on first use) by their key: two machines that share a name
/// are two known peers, not a changed key.
package struct KeyCheck: Sendable {
  let knownPeers: KnownPeers
  let decider: any SendDecider
  let events: @Sendable (SendEvent) -> Void

  /// A check against `knownPeers`, asking `decider`, reporting to `events`.
  package init(
    knownPeers: KnownPeers, decider: any SendDecider,
    events: @escaping @Sendable (SendEvent) -> Void
  ) {
    (self.knownPeers, self.decider, self.events) = (knownPeers, decider, events)
  }

  /// nil to go on; the failure when `peer`'s name is pinned to another key and nobody
  /// confirmed sending to it. `pinned`: the user named this fingerprint.
  package func confirm(_ peer: PeerID, pinned: Bool, timeout: Duration) async -> SendFailure? {
    guard !pinned, let status = try? knownPeers.status(of: peer) else { return nil }
    let previous: Fingerprint
    switch status {
    case .changedKey(let key), .similarName(_, let key): previous = key
    case .known, .new: return nil
    }
    events(.keyChanged(peer, status: status, previous: previous))
    if await decider.sendDespiteKeyChange(to: peer, previous: previous, timeout: timeout) {
      return nil
    }
    let name = printable(peer.displayName)
    let newPrefix = String(peer.fingerprint.hexString.prefix(Fingerprint.minimumPrefixDigits))
    let oldPrefix = String(previous.hexString.prefix(Fingerprint.minimumPrefixDigits))
    return SendFailure(
      .keyChanged,
      "nothing sent to '\(name)': that name is trusted with another key "
        + "(\(previous.shortDescription)). Check that 'ferry identity' on it shows "
        + "\(peer.fingerprint.shortDescription); then send with --to \(newPrefix). If it "
        + "replaced the trusted machine (reinstalled), also run 'ferry forget \(oldPrefix)' and "
        + "'ferry trust \(newPrefix) --name NAME'")
  }

  /// Remembers a receiver that accepted (name and key), for the next check, and the
  /// addresses it was reached at (`HOST:PORT`), for when discovery does not find it.
  package func remember(_ peer: PeerID, reachedAt addresses: [String] = []) {
    try? knownPeers.recordSeen(peer)
    try? knownPeers.recordReached(peer.fingerprint, at: addresses)
  }
}
