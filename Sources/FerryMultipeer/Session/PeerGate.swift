import Ferry

/// The MultipeerConnectivity state of every peer of one session, and the order of what the
/// delegate hears: pure state, no threads (the session calls it under its lock, and performs
/// the returned steps in order).
///
/// Ferry reports a link's states on one stream and its data on others, read by separate tasks;
/// the gate restores MultipeerConnectivity's order. A peer's `connecting` comes first (made up
/// when Ferry's own comes late or never), then the certificate question, then `connected`, and
/// only then the data, streams and resources that arrived meanwhile (held until then). Repeated
/// reports are dropped, and a peer whose certificate the delegate declined is heard no more.
struct PeerGate<Event> {
  /// One peer's state, carrying what waits for it.
  enum Phase {
    /// Never heard of, or gone before it connected.
    case idle
    /// `connecting` delivered; events that arrived early wait in `held`.
    case connecting(held: [Event])
    /// Ferry connected it; the delegate is deciding on its certificate (`question` tells a
    /// late answer to an earlier question apart).
    case awaitingCertificate(question: UInt64, held: [Event])
    /// `connected` delivered: events go straight through.
    case connected
    /// Connected, and the peer closed the link saying it keeps a newer one to this peer (two
    /// invitations crossed): still connected for the delegate while Ferry adopts the newer
    /// link, for at most ``replacementGrace``; `token` tells the expiry of this wait apart.
    case replaced(token: UInt64)
    /// Was connected and is gone: late events of the ended link still go through, in order.
    case ended
    /// Its certificate was declined: its events are dropped until it connects again.
    case refused
  }

  /// A step for the session to perform, in order.
  enum Step {
    /// Tell the delegate the peer's state.
    case report(PeerID, MCSessionState)
    /// Ask the delegate about the peer's certificate; answer with ``certificateAnswered``.
    case askCertificate(PeerID, question: UInt64)
    /// Pass the event to the delegate.
    case deliver(Event)
    /// Drop the event (its sender may wait for it to be handled).
    case drop(Event)
    /// Close the link to the peer (its certificate was declined).
    case disconnect(PeerID)
    /// Call ``replacementExpired(_:token:)`` after ``replacementGrace``.
    case awaitReplacement(PeerID, token: UInt64)
  }

  /// How long the delegate has to answer a certificate question: then the peer is declined
  /// (events wait for the answer, so an unanswered question must not hold them for ever).
  static var certificateTimeout: Duration { .seconds(30) }

  /// How long a peer whose link was replaced stays connected waiting for the newer link.
  static var replacementGrace: Duration { .seconds(2) }

  private(set) var phases: [Fingerprint: Phase] = [:]
  /// Invitations to or from each peer still under way. While one is, a failed attempt or
  /// Ferry's `notConnected` for a link that never connected is not reported: two apps that
  /// invite each other at once make two attempts, one of which loses, and the other one
  /// decides.
  private var attempts: [Fingerprint: Int] = [:]
  private var questions: UInt64 = 0
  /// Peers asked about whose link the peer replaced before the answer: the wait's token.
  private var replacing: [Fingerprint: UInt64] = [:]

  /// The peers whose `connected` was delivered and not yet followed by `notConnected`.
  var connected: [Fingerprint] {
    phases.keys.filter { isConnected($0) }
  }

  /// Whether `fingerprint`'s `connected` was delivered (and it has not left since).
  func isConnected(_ fingerprint: Fingerprint) -> Bool {
    switch phases[fingerprint] {
    case .connected, .replaced: true
    default: false
    }
  }

  /// An invitation to or from `peer` began (before Ferry reports anything); end it with
  /// ``attemptEnded(_:failed:)``.
  mutating func attemptBegan(_ peer: PeerID) -> [Step] {
    attempts[peer.fingerprint, default: 0] += 1
    return connecting(peer)
  }

  /// An invitation to or from `peer` ended: `notConnected` when it failed, no other attempt
  /// is under way and the peer did not connect anyway (a crossed invitation kept the other
  /// link).
  mutating func attemptEnded(_ peer: PeerID, failed: Bool) -> [Step] {
    let left = max(0, attempts[peer.fingerprint, default: 0] - 1)
    attempts[peer.fingerprint] = left == 0 ? nil : left
    guard failed, left == 0, case .connecting(let held) = phases[peer.fingerprint] else {
      return []
    }
    phases[peer.fingerprint] = .idle
    return [.report(peer, .notConnected)] + held.map { .drop($0) }
  }

  /// Ferry reported `peer` connecting, or an event came before its state.
  private mutating func connecting(_ peer: PeerID) -> [Step] {
    switch phases[peer.fingerprint] ?? .idle {
    case .idle, .ended, .refused:
      phases[peer.fingerprint] = .connecting(held: [])
      return [.report(peer, .connecting)]
    case .connecting, .awaitingCertificate, .connected, .replaced:
      return []
    }
  }

  /// Ferry reported `state` for `peer`; `replacedByPeer` when the peer closed the link
  /// saying it keeps a newer one (``LinkEnd/superseded(words:)``).
  mutating func ferryReported(_ state: PeerState, for peer: PeerID, replacedByPeer: Bool = false)
    -> [Step]
  {
    let phase = phases[peer.fingerprint] ?? .idle
    switch (state, phase) {
    case (.connecting, _):
      return connecting(peer)
    case (.connected, .replaced):
      phases[peer.fingerprint] = .connected  // the newer link: the same peer, still connected
      return []
    case (.notConnected, .connected) where replacedByPeer:
      questions += 1
      phases[peer.fingerprint] = .replaced(token: questions)
      return [.awaitReplacement(peer, token: questions)]
    case (.notConnected, .replaced):
      phases[peer.fingerprint] = .ended
      return [.report(peer, .notConnected)]
    case (.notConnected, .awaitingCertificate(let question, _)) where replacedByPeer:
      // The question stands: the newer link has the same certificate.
      replacing[peer.fingerprint] = question
      return [.awaitReplacement(peer, token: question)]
    case (.connected, .awaitingCertificate):
      replacing[peer.fingerprint] = nil
      return []
    case (.connected, .idle), (.connected, .ended), (.connected, .refused):
      questions += 1
      phases[peer.fingerprint] = .awaitingCertificate(question: questions, held: [])
      return [.report(peer, .connecting), .askCertificate(peer, question: questions)]
    case (.connected, .connecting(let held)):
      questions += 1
      phases[peer.fingerprint] = .awaitingCertificate(question: questions, held: held)
      return [.askCertificate(peer, question: questions)]
    case (.connected, .connected):
      return []
    case (.notConnected, .connecting) where attempts[peer.fingerprint, default: 0] > 0:
      // One link of an attempt under way failed; the attempt's own end decides.
      return []
    case (.notConnected, .connecting(let held)), (.notConnected, .awaitingCertificate(_, let held)):
      replacing[peer.fingerprint] = nil
      phases[peer.fingerprint] = .idle
      return [.report(peer, .notConnected)] + held.map { .drop($0) }
    case (.notConnected, .connected):
      phases[peer.fingerprint] = .ended
      return [.report(peer, .notConnected)]
    case (.notConnected, .idle), (.notConnected, .ended), (.notConnected, .refused):
      return []
    }
  }

  /// The grace of a replaced link ended: `notConnected` unless the newer link came.
  mutating func replacementExpired(_ peer: PeerID, token: UInt64) -> [Step] {
    switch phases[peer.fingerprint] {
    case .replaced(let waiting) where waiting == token:
      phases[peer.fingerprint] = .ended
      return [.report(peer, .notConnected)]
    case .awaitingCertificate(let question, let held)
    where question == token && replacing[peer.fingerprint] == token:
      replacing[peer.fingerprint] = nil
      phases[peer.fingerprint] = .idle
      return [.report(peer, .notConnected)] + held.map { .drop($0) }
    default:
      return []
    }
  }

  /// The delegate answered certificate question `question` about `peer`.
  mutating func certificateAnswered(_ accepted: Bool, for peer: PeerID, question: UInt64)
    -> [Step]
  {
    guard case .awaitingCertificate(let asked, let held) = phases[peer.fingerprint],
      asked == question
    else { return [] }
    let waiting = replacing.removeValue(forKey: peer.fingerprint)
    if accepted {
      // Still waiting for the newer link: connected, until the wait says otherwise.
      phases[peer.fingerprint] = waiting.map { .replaced(token: $0) } ?? .connected
      return [.report(peer, .connected)] + held.map { .deliver($0) }
    }
    phases[peer.fingerprint] = .refused
    return [.disconnect(peer), .report(peer, .notConnected)] + held.map { .drop($0) }
  }

  /// Data, a stream or a resource event from `peer`: delivered, held until the peer is
  /// connected, or dropped when its certificate was declined. `linkAlive` says whether Ferry
  /// lists the peer now: an event of a link that ended before it was reported connected is
  /// dropped (nothing would ever release it), and an event after `notConnected` is held for
  /// the new link when one is up, else delivered late. At most ``maximumHeld`` events wait for
  /// one peer: one more disconnects it.
  mutating func received(_ event: Event, from peer: PeerID, linkAlive: Bool = true) -> [Step] {
    switch phases[peer.fingerprint] ?? .idle {
    case .connected, .replaced:
      return [.deliver(event)]
    case .ended where !linkAlive:
      return [.deliver(event)]
    case .idle, .ended:
      guard linkAlive else { return [.drop(event)] }
      phases[peer.fingerprint] = .connecting(held: [event])
      return [.report(peer, .connecting)]
    case .connecting(var held):
      guard linkAlive else { return [.drop(event)] }
      guard held.count < Self.maximumHeld else { return overflow(peer, held: held + [event]) }
      held.append(event)
      phases[peer.fingerprint] = .connecting(held: held)
      return []
    case .awaitingCertificate(let question, var held):
      guard linkAlive else { return [.drop(event)] }
      guard held.count < Self.maximumHeld else { return overflow(peer, held: held + [event]) }
      held.append(event)
      phases[peer.fingerprint] = .awaitingCertificate(question: question, held: held)
      return []
    case .refused:
      return [.drop(event)]
    }
  }

  /// Events one peer may have waiting for its `connected`.
  static var maximumHeld: Int { 256 }

  /// Too many events wait for `peer`: it is disconnected and they are dropped.
  private mutating func overflow(_ peer: PeerID, held: [Event]) -> [Step] {
    replacing[peer.fingerprint] = nil
    phases[peer.fingerprint] = .refused
    return [.disconnect(peer), .report(peer, .notConnected)] + held.map { .drop($0) }
  }

  /// Everything waiting, for a session that is going away: each is to be dropped.
  mutating func drainAll() -> [Step] {
    var steps: [Step] = []
    for (fingerprint, phase) in phases {
      switch phase {
      case .connecting(let held), .awaitingCertificate(_, let held):
        steps += held.map { .drop($0) }
        phases[fingerprint] = .idle
      default:
        continue
      }
    }
    return steps
  }

  /// Forgets peers that are neither connecting nor connected, when more than `keep` peers are
  /// known (peers that come and go with new identities must not grow the table for ever).
  ///
  /// - Returns: The fingerprints forgotten.
  mutating func prune(keeping keep: Int) -> [Fingerprint] {
    guard phases.count > keep else { return [] }
    let gone = phases.compactMap { fingerprint, phase -> Fingerprint? in
      switch phase {
      case .idle, .ended, .refused: fingerprint
      default: nil
      }
    }
    for fingerprint in gone {
      phases[fingerprint] = nil
      attempts[fingerprint] = nil
      replacing[fingerprint] = nil
    }
    return gone
  }
}
