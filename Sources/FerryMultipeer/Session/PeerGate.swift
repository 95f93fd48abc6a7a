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
  }

  private(set) var phases: [Fingerprint: Phase] = [:]
  private var questions: UInt64 = 0

  /// The peers whose `connected` was delivered and not yet followed by `notConnected`.
  var connected: [Fingerprint] {
    phases.compactMap { fingerprint, phase in
      if case .connected = phase { return fingerprint }
      return nil
    }
  }

  /// Whether `fingerprint`'s `connected` was delivered (and it has not left since).
  func isConnected(_ fingerprint: Fingerprint) -> Bool {
    if case .connected = phases[fingerprint] { return true }
    return false
  }

  /// An invitation to or from `peer` began (before Ferry reports anything).
  mutating func connecting(_ peer: PeerID) -> [Step] {
    switch phases[peer.fingerprint] ?? .idle {
    case .idle, .ended, .refused:
      phases[peer.fingerprint] = .connecting(held: [])
      return [.report(peer, .connecting)]
    case .connecting, .awaitingCertificate, .connected:
      return []
    }
  }

  /// An invitation to or from `peer` failed: `notConnected`, unless it connected anyway (a
  /// crossed invitation kept the other link).
  mutating func attemptFailed(_ peer: PeerID) -> [Step] {
    guard case .connecting(let held) = phases[peer.fingerprint] else { return [] }
    phases[peer.fingerprint] = .idle
    return [.report(peer, .notConnected)] + held.map { .drop($0) }
  }

  /// Ferry reported `state` for `peer`.
  mutating func ferryReported(_ state: PeerState, for peer: PeerID) -> [Step] {
    let phase = phases[peer.fingerprint] ?? .idle
    switch (state, phase) {
    case (.connecting, _):
      return connecting(peer)
    case (.connected, .idle), (.connected, .ended), (.connected, .refused):
      questions += 1
      phases[peer.fingerprint] = .awaitingCertificate(question: questions, held: [])
      return [.report(peer, .connecting), .askCertificate(peer, question: questions)]
    case (.connected, .connecting(let held)):
      questions += 1
      phases[peer.fingerprint] = .awaitingCertificate(question: questions, held: held)
      return [.askCertificate(peer, question: questions)]
    case (.connected, .awaitingCertificate), (.connected, .connected):
      return []
    case (.notConnected, .connecting(let held)), (.notConnected, .awaitingCertificate(_, let held)):
      phases[peer.fingerprint] = .idle
      return [.report(peer, .notConnected)] + held.map { .drop($0) }
    case (.notConnected, .connected):
      phases[peer.fingerprint] = .ended
      return [.report(peer, .notConnected)]
    case (.notConnected, .idle), (.notConnected, .ended), (.notConnected, .refused):
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
    if accepted {
      phases[peer.fingerprint] = .connected
      return [.report(peer, .connected)] + held.map { .deliver($0) }
    }
    phases[peer.fingerprint] = .refused
    return [.disconnect(peer), .report(peer, .notConnected)] + held.map { .drop($0) }
  }

  /// Data, a stream or a resource event from `peer`: delivered, held until the peer is
  /// connected, or dropped when its certificate was declined.
  mutating func received(_ event: Event, from peer: PeerID) -> [Step] {
    switch phases[peer.fingerprint] ?? .idle {
    case .connected, .ended:
      return [.deliver(event)]
    case .idle:
      phases[peer.fingerprint] = .connecting(held: [event])
      return [.report(peer, .connecting)]
    case .connecting(var held):
      held.append(event)
      phases[peer.fingerprint] = .connecting(held: held)
      return []
    case .awaitingCertificate(let question, var held):
      held.append(event)
      phases[peer.fingerprint] = .awaitingCertificate(question: question, held: held)
      return []
    case .refused:
      return [.drop(event)]
    }
  }

  /// The session closed: every peer not yet `notConnected` becomes so.
  mutating func closeAll(_ peers: [PeerID]) -> [Step] {
    var steps: [Step] = []
    for peer in peers {
      steps += ferryReported(.notConnected, for: peer)
    }
    return steps
  }
}
