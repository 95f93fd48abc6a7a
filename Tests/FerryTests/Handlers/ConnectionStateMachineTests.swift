import FerryWire
import Testing

@testable import Ferry

/// The connection's protocol as a pure state machine: every state × frame pair, every timer and
/// every answer of the application, with the actions each returns (docs/PROTOCOL.md §3, §5).
@Suite("Connection state machine")
struct ConnectionStateMachineTests {
  typealias Machine = ConnectionStateMachine
  typealias Action = ConnectionStateMachine.Action

  static let local = Identity.generate().fingerprint
  static let remote = Identity.generate().fingerprint
  static let peer = try! PeerID(displayName: "there", fingerprint: remote)
  static let now = ContinuousClock.now
  /// The TLS session's exporter value, and each end's nonce.
  static let keying = [UInt8](repeating: 0x4B, count: 32)
  static let inviterNonce = [UInt8](repeating: 0x11, count: 32)
  static let advertiserNonce = [UInt8](repeating: 0x22, count: 32)
  static let commitment = VerificationCode.commitment(to: advertiserNonce)
  /// The code both ends derive (here both are told they are `local`, facing `remote`).
  static let code = VerificationCode(
    keyingMaterial: keying, inviterNonce: inviterNonce, advertiserNonce: advertiserNonce,
    fingerprints: local, remote)

  /// A machine of `role` with this suite's fingerprint and nonces.
  static func make(_ role: Machine.Role, name: String = "here") -> Machine {
    let nonce: [UInt8]
    if case .inviter = role { nonce = inviterNonce } else { nonce = advertiserNonce }
    return Machine(
      role: role, localName: name, localFingerprint: local, timeouts: ConnectionTimeouts(),
      nonce: nonce)
  }

  /// Every state a connection can be in, and how to get there from the start. `awaitingAnswer`
  /// is the inviter before REVEAL, `revealed` after it.
  enum Stage: String, CaseIterable, CustomTestStringConvertible {
    case tlsHandshake, awaitingHello, awaitingCommit, awaitingInvite, awaitingAnswer, revealed
    case pendingDecision, connectedInviter, connectedAdvertiser, closed

    var testDescription: String { rawValue }

    var isInviter: Bool {
      [.awaitingCommit, .awaitingAnswer, .revealed, .connectedInviter].contains(self)
    }

    /// A machine in this stage.
    func machine() -> Machine {
      typealias Outer = ConnectionStateMachineTests
      var machine = Outer.make(
        isInviter ? .inviter(context: [1, 2], timeout: .seconds(30)) : .advertiser)
      if self == .tlsHandshake { return machine }
      _ = machine.tlsCompleted(
        peer: Outer.remote, alpn: WireProtocol.alpn, keyingMaterial: Outer.keying)
      if self == .awaitingHello { return machine }
      _ = machine.received(
        .hello(versions: WireProtocol.supportedVersions, displayName: "there"), now: Outer.now)
      switch self {
      case .awaitingCommit, .awaitingInvite: return machine
      default: break
      }
      if isInviter {
        _ = machine.received(.commit(Outer.commitment), now: Outer.now)
        if self == .awaitingAnswer { return machine }
        _ = machine.received(.reveal(Outer.advertiserNonce), now: Outer.now)
        if self == .revealed { return machine }
        _ = machine.received(.accept, now: Outer.now)
        return machine
      }
      _ = machine.received(
        .invite(timeoutMilliseconds: 10_000, nonce: Outer.inviterNonce, context: []),
        now: Outer.now)
      switch self {
      case .pendingDecision: return machine
      case .connectedAdvertiser:
        _ = machine.accept()
        return machine
      default:
        _ = machine.decline(.declined, reason: "")
        return machine
      }
    }
  }

  /// One control message of each type.
  static let messages: [(String, ControlMessage)] = [
    ("HELLO", .hello(versions: WireProtocol.supportedVersions, displayName: "again")),
    ("COMMIT", .commit(commitment)),
    ("INVITE", .invite(timeoutMilliseconds: 1000, nonce: inviterNonce, context: [])),
    ("REVEAL", .reveal(advertiserNonce)),
    ("ACCEPT", .accept),
    ("DECLINE", .decline(.busy, reason: "")),
    ("CANCEL", .cancel),
    ("PING", .ping(9)),
    ("PONG", .pong(9)),
    ("GOODBYE", .goodbye(.normal, reason: "bye")),
  ]

  /// Which control messages each stage handles (beyond GOODBYE, which every open stage after
  /// TLS handles); every other one is a protocol error there, and everything is ignored once
  /// closed.
  static let allowed: [Stage: Set<String>] = [
    .tlsHandshake: [],
    .awaitingHello: ["HELLO"],
    .awaitingCommit: ["COMMIT"],
    .awaitingInvite: ["INVITE"],
    // ACCEPT before REVEAL is a protocol error: the inviter never had the code to show.
    .awaitingAnswer: ["REVEAL", "DECLINE"],
    .revealed: ["ACCEPT", "DECLINE"],
    .pendingDecision: ["CANCEL"],
    .connectedInviter: ["PING", "PONG"],
    .connectedAdvertiser: ["PING", "PONG"],
  ]

  static func isViolation(_ actions: [Action]) -> Bool {
    actions.contains {
      if case .send(.goodbye(.protocolError, _)) = $0 { return true }
      return false
    }
  }

  @Test("every state × control frame: handled where allowed, a protocol error elsewhere")
  func stateByFrame() {
    for stage in Stage.allCases {
      for (name, message) in Self.messages {
        var machine = stage.machine()
        let before = machine.state
        let actions = machine.received(message, now: Self.now)
        let context = "\(stage.rawValue) × \(name): \(actions)"
        if stage == .closed {
          #expect(actions.isEmpty && machine.isClosed, "\(context)")
        } else if stage == .tlsHandshake {
          // Nothing can arrive before TLS is up; if it did, the connection closes, without a
          // GOODBYE (TLS is not there to carry it).
          #expect(actions.contains(.close) && !Self.isViolation(actions), "\(context)")
        } else if name == "GOODBYE" {
          #expect(actions.contains(.close) && !Self.isViolation(actions), "\(context)")
          #expect(machine.end?.description.contains("bye") == true, "\(context)")
          #expect(machine.end?.isOnPurpose == true, "\(context)")
        } else if Self.allowed[stage]!.contains(name) {
          #expect(!Self.isViolation(actions), "\(context)")
        } else {
          #expect(Self.isViolation(actions) && actions.contains(.close), "\(context)")
          if case .connected = before {
            #expect(actions.contains(.linkEnded(machine.end!)), "\(context)")
          }
        }
      }
    }
  }

  @Test("every state × session frame: forwarded only when connected")
  func stateBySessionFrame() {
    for stage in Stage.allCases {
      var machine = stage.machine()
      let actions = machine.sessionFrame(.chunk)
      switch stage {
      case .connectedInviter, .connectedAdvertiser: #expect(actions == [.forward])
      case .closed: #expect(actions.isEmpty)
      case .tlsHandshake: #expect(actions.contains(.close), "\(actions)")
      default: #expect(Self.isViolation(actions), "\(stage.rawValue): \(actions)")
      }
    }
  }

  @Test("the handshake: HELLO, COMMIT, INVITE (clamped), REVEAL, the answer, on both ends")
  func handshake() {
    var inviter = Self.make(.inviter(context: [7], timeout: .seconds(86_400)), name: "me")
    #expect(
      inviter.tlsCompleted(peer: Self.remote, alpn: WireProtocol.alpn, keyingMaterial: Self.keying)
        == [.send(.hello(versions: WireProtocol.supportedVersions, displayName: "me"))])
    #expect(
      inviter.received(.hello(versions: [4, 9], displayName: "there"), now: Self.now) == [
        .peerKnown(Self.peer)
      ], "INVITE waits for the advertiser's commitment")
    if case .awaitingCommit(let known) = inviter.state {
      #expect(known.peer == Self.peer && known.version == 4)
    } else {
      Issue.record("not awaiting COMMIT: \(inviter.state)")
    }
    let invite = inviter.received(.commit(Self.commitment), now: Self.now)
    #expect(
      invite == [
        .send(.invite(timeoutMilliseconds: 120_000, nonce: Self.inviterNonce, context: [7]))
      ], "a day's wait is clamped to 120 s; the handshake deadline runs until REVEAL")
    if case .awaitingAnswer(let asked) = inviter.state {
      #expect(asked.known.peer == Self.peer && asked.expiresAt == Self.now + .seconds(120))
    } else {
      Issue.record("not awaiting the answer: \(inviter.state)")
    }
    #expect(inviter.verificationCode == nil)
    #expect(
      inviter.received(.reveal(Self.advertiserNonce), now: Self.now) == [
        .cancelDeadline, .verificationCode(Self.code),
      ])
    #expect(inviter.verificationCode == Self.code)
    #expect(
      inviter.received(.accept, now: Self.now) == [
        .markConnected, .startHeartbeat, .answer(.success(Self.peer)),
      ])

    var advertiser = Self.make(.advertiser, name: "me")
    // openssl s_client offers no ALPN
    _ = advertiser.tlsCompleted(peer: Self.remote, alpn: nil, keyingMaterial: Self.keying)
    #expect(
      advertiser.received(.hello(versions: [4], displayName: "there"), now: Self.now) == [
        .send(.commit(Self.commitment))
      ], "committed before the INVITE")
    let invited = advertiser.received(
      .invite(timeoutMilliseconds: .max, nonce: Self.inviterNonce, context: [3]), now: Self.now)
    #expect(
      invited == [
        .cancelDeadline, .scheduleExpiry(.seconds(121)),
        .invite(
          .init(
            peer: Self.peer, context: [3], timeout: .seconds(120),
            expiresAt: Self.now + .seconds(120), verificationCode: Self.code)),
      ], "it expires 120 s after the INVITE arrived, however late the application sees it")
    #expect(advertiser.verificationCode == Self.code)
    #expect(advertiser.isPendingDecision)
    // Once admitted (the listener does so before the application is asked).
    #expect(advertiser.reveal() == [.send(.reveal(Self.advertiserNonce))])
    #expect(advertiser.reveal().isEmpty, "revealed once")
    #expect(
      advertiser.accept() == [.cancelDeadline, .markConnected, .send(.accept), .startHeartbeat])
    #expect(advertiser.isConnected && advertiser.accept().isEmpty, "accepted once")
  }

  @Test("the code changes with each end's nonce, and a REVEAL must match its COMMIT")
  func nonces() {
    // Another inviter nonce (a man in the middle cannot choose it after seeing the
    // advertiser's: that one is hidden until the INVITE is in).
    var advertiser = Self.make(.advertiser)
    _ = advertiser.tlsCompleted(peer: Self.remote, alpn: nil, keyingMaterial: Self.keying)
    _ = advertiser.received(.hello(versions: [4], displayName: "there"), now: Self.now)
    let other = [UInt8](repeating: 0x33, count: 32)
    _ = advertiser.received(
      .invite(timeoutMilliseconds: 1000, nonce: other, context: []), now: Self.now)
    #expect(advertiser.verificationCode != nil && advertiser.verificationCode != Self.code)

    // A nonce other than the one committed to.
    var inviter = Stage.awaitingAnswer.machine()
    let actions = inviter.received(.reveal(other), now: Self.now)
    #expect(Self.isViolation(actions) && actions.contains(.close), "\(actions)")
    #expect(inviter.verificationCode == nil)
    #expect(
      actions.contains(.answer(.failure(.protocolViolation(reason: inviter.end!.description)))))
  }

  @Test("refusals before the invitation: no common version, a bad name, no ALPN, no certificate")
  func refusals() {
    var old = Stage.awaitingHello.machine()
    let actions = old.received(.hello(versions: [7], displayName: "future"), now: Self.now)
    #expect(
      actions.first == .send(.goodbye(.unsupportedVersion, reason: "no common protocol version")))
    #expect(actions.last == .close)

    // Versions 1 to 3 (a code from the fingerprints alone) are never agreed on.
    var older = Stage.awaitingHello.machine()
    let downgraded = older.received(.hello(versions: [3, 2, 1], displayName: "old"), now: Self.now)
    #expect(
      downgraded.first
        == .send(.goodbye(.unsupportedVersion, reason: "no common protocol version")))
    #expect(older.version == nil && downgraded.last == .close)

    var unnamed = Stage.awaitingHello.machine()
    #expect(
      Self.isViolation(
        unnamed.received(
          .hello(versions: WireProtocol.supportedVersions, displayName: ""), now: Self.now)))

    var web = Self.make(.inviter(context: [], timeout: .seconds(5)), name: "me")
    let refused = web.tlsCompleted(peer: Self.remote, alpn: nil, keyingMaterial: Self.keying)
    guard case .answer(.failure(.authenticationFailed(let reason)))? = refused.first else {
      Issue.record("\(refused)")
      return
    }
    #expect(reason.contains("ALPN") && refused.last == .close)

    var anonymous = Self.make(.advertiser, name: "me")
    #expect(
      anonymous.tlsCompleted(peer: nil, alpn: WireProtocol.alpn, keyingMaterial: Self.keying)
        == [.close])
    #expect(
      anonymous.end?.description == "authentication failed: the peer presented no certificate")

    // No exporter value: no code could be compared, so no connection.
    var unexported = Self.make(.inviter(context: [], timeout: .seconds(5)))
    let unkeyed = unexported.tlsCompleted(
      peer: Self.remote, alpn: WireProtocol.alpn, keyingMaterial: nil)
    guard case .answer(.failure(.authenticationFailed))? = unkeyed.first else {
      Issue.record("\(unkeyed)")
      return
    }
    #expect(unkeyed.last == .close)
  }

  @Test("timers: the handshake deadline, the invitation's expiry, the heartbeat")
  func timers() {
    for stage in Stage.allCases {
      var machine = stage.machine()
      let actions = machine.handshakeDeadlinePassed()
      switch stage {
      case .tlsHandshake: #expect(actions == [.close])
      case .awaitingHello, .awaitingInvite:
        #expect(actions == [.send(.goodbye(.timeout, reason: "handshake timed out")), .close])
      case .awaitingCommit:
        #expect(
          actions == [
            .send(.goodbye(.timeout, reason: "handshake timed out")),
            .answer(.failure(.timedOut)), .close,
          ])
      case .awaitingAnswer:
        // REVEAL comes at once from an advertiser; a man in the middle may not sit on it.
        #expect(actions == [.send(.cancel), .answer(.failure(.timedOut)), .close])
      default: #expect(actions.isEmpty, "\(stage.rawValue): \(actions)")
      }
      var expiring = stage.machine()
      let expired = expiring.invitationExpired()
      #expect(
        expired == (stage == .pendingDecision ? [.invitationWithdrawn, .close] : []),
        "\(stage.rawValue)")
    }
    var alive = Stage.connectedAdvertiser.machine()
    #expect(alive.heartbeat(silentFor: .seconds(1)) == [.send(.ping(1))])
    #expect(alive.heartbeat(silentFor: .seconds(7)) == [.send(.ping(2))])
    let dead = alive.heartbeat(silentFor: .milliseconds(7001))
    #expect(
      dead == [
        .stopHeartbeat, .linkEnded(.timedOut(.seconds(7))),
        .close,
      ])
    #expect(alive.heartbeat(silentFor: .seconds(60)).isEmpty, "reported once")
    // The connection's own end afterwards keeps the reason: a dead link is not "closed".
    let inactive = alive.channelInactive(now: .now)
    #expect(!"\(inactive)".contains("was closed"), "\(inactive)")
    #expect(alive.end == .timedOut(.seconds(7)))
    #expect(alive.end?.description.contains("timed out") == true)
  }

  @Test("the application's answers and the inviter's withdrawal, in every state")
  func answers() {
    for stage in Stage.allCases {
      var revealing = stage.machine()
      let revealed = revealing.reveal()
      #expect(
        revealed == (stage == .pendingDecision ? [.send(.reveal(Self.advertiserNonce))] : []),
        "\(stage.rawValue)")
      var unrevealed = stage.machine()
      if stage == .pendingDecision {
        // Accepting reveals first, if the listener did not: ACCEPT never precedes REVEAL.
        #expect(
          unrevealed.accept() == [
            .cancelDeadline, .markConnected, .send(.reveal(Self.advertiserNonce)),
            .send(.accept), .startHeartbeat,
          ])
      }
      var declining = stage.machine()
      let declined = declining.decline(.busy, reason: "busy")
      if stage == .pendingDecision || stage == .awaitingInvite {
        #expect(declined == [.cancelDeadline, .send(.decline(.busy, reason: "busy")), .close])
        #expect(declining.isClosed)
      } else {
        #expect(declined.isEmpty, "\(stage.rawValue)")
      }
      var withdrawing = stage.machine()
      let withdrawn = withdrawing.withdraw(.cancelled)
      switch stage {
      case .awaitingAnswer, .revealed:
        #expect(withdrawn == [.send(.cancel), .answer(.failure(.cancelled)), .close])
      case .closed, .connectedInviter, .connectedAdvertiser:
        #expect(withdrawn.isEmpty)
      default:
        #expect(withdrawn.last == .close, "\(stage.rawValue)")
      }
    }
  }

  @Test("the end: each state tells what waited on it, once, with the reason")
  func channelInactive() {
    for stage in Stage.allCases {
      var machine = stage.machine()
      let actions = machine.channelInactive(now: Self.now)
      #expect(actions.starts(with: [.cancelDeadline, .stopHeartbeat]))
      let rest = Array(actions.dropFirst(2))
      switch stage {
      case .connectedInviter, .connectedAdvertiser:
        #expect(rest == [.linkEnded(.lost(words: "the connection was closed"))])
      case .pendingDecision: #expect(rest == [.invitationWithdrawn])
      case .awaitingCommit, .awaitingAnswer, .revealed:
        #expect(rest == [.answer(.failure(.connectionFailed(reason: "the connection was closed")))])
      case .tlsHandshake, .awaitingHello, .awaitingInvite, .closed:
        #expect(rest.isEmpty, "\(stage.rawValue): \(rest)")  // the advertiser has no answer
      }
      #expect(machine.isClosed)
      #expect(machine.channelInactive(now: Self.now) == [.cancelDeadline, .stopHeartbeat])
    }
    // The inviter's answer fails once, with the first cause; its deadline makes it a timeout.
    var declined = Stage.awaitingAnswer.machine()
    _ = declined.received(.decline(.declined, reason: "no"), now: Self.now)
    #expect(declined.channelInactive(now: Self.now) == [.cancelDeadline, .stopHeartbeat])
    var late = Stage.awaitingAnswer.machine()
    #expect(
      late.channelInactive(now: Self.now + .seconds(31)).last == .answer(.failure(.timedOut)))
  }

  @Test("violations and disconnects: GOODBYE with the reason, the link ended once")
  func violations() {
    var connected = Stage.connectedInviter.machine()
    let actions = connected.violation("limit exceeded: too much")
    #expect(
      actions == [
        .send(.goodbye(.protocolError, reason: "limit exceeded: too much")), .stopHeartbeat,
        .linkEnded(.violation(words: "limit exceeded: too much")), .close,
      ])
    #expect(connected.violation("again").isEmpty)
    #expect(connected.sessionFrame(.message).isEmpty, "nothing forwarded after the end")

    var leaving = Stage.connectedAdvertiser.machine()
    #expect(
      leaving.disconnect(reason: "done") == [
        .send(.goodbye(.normal, reason: "done")), .stopHeartbeat,
        .linkEnded(.closedHere(words: "done")), .close,
      ])
    var vanished = Stage.connectedAdvertiser.machine()
    _ = vanished.received(.goodbye(.normal, reason: ""), now: Self.now)
    #expect(vanished.errorCaught(.uncleanShutdown) == [.close])
    #expect(
      vanished.end == .closedByPeer(words: "the peer closed the connection"),
      "the GOODBYE's reason stays")
  }

  @Test(
    "a superseded link says so in its GOODBYE's code (version 5) or in words (version 4), and the end it reports is typed"
  )
  func superseded() {
    // This side: code 4 to a peer that agreed on version 5, code 0 and the words to version 4.
    for (version, code) in [(UInt16(5), ControlMessage.GoodbyeCode.superseded), (4, .normal)] {
      var machine = Self.make(.advertiser)
      _ = machine.tlsCompleted(
        peer: Self.remote, alpn: WireProtocol.alpn, keyingMaterial: Self.keying)
      _ = machine.received(.hello(versions: [version], displayName: "there"), now: Self.now)
      _ = machine.received(
        .invite(timeoutMilliseconds: 1000, nonce: Self.inviterNonce, context: []), now: Self.now)
      _ = machine.accept()
      let actions = machine.disconnect(superseded: .replaced)
      #expect(
        actions.first == .send(.goodbye(code, reason: "replaced by a new connection")),
        "\(version): \(actions)")
      #expect(machine.end == .superseded(words: "replaced by a new connection"))
      #expect(machine.end?.isOnPurpose == true && machine.end?.isSuperseded == true)
    }
    // The peer: code 4, or code 0 with one of the words a version 4 peer says it in.
    let heard: [(ControlMessage.GoodbyeCode, String, Bool)] = [
      (.superseded, "anything", true),
      (.normal, "connected already, by this end's invitation", true),
      (.normal, "connected already, by the peer's invitation", true),
      (.normal, "replaced by a new connection", true), (.normal, "shutting down", false),
      (.normal, "xreplaced by a new connection", false),
    ]
    for (code, reason, superseded) in heard {
      var machine = Stage.connectedAdvertiser.machine()
      let actions = machine.received(.goodbye(code, reason: reason), now: Self.now)
      #expect(machine.end?.isSuperseded == superseded, "\(code) \(reason)")
      #expect(machine.end?.isOnPurpose == true)
      #expect(actions.contains(.linkEnded(machine.end!)), "\(actions)")
    }
  }

  @Test(
    "a GOODBYE or a violation before the answer is told apart from a broken connection (only that is retried)"
  )
  func handshakeEndings() {
    let cases: [(ControlMessage.GoodbyeCode, String, InvitationError)] = [
      (
        .normal, "shutting down",
        .closedByPeer(reason: "the peer closed the connection: shutting down")
      ),
      (.protocolError, "bad frame", .protocolViolation(reason: "the peer reported one: bad frame")),
      (.timeout, "", .connectionFailed(reason: "the peer closed the connection")),
      (.unsupportedVersion, "", .protocolVersionUnsupported(peerVersions: [])),
    ]
    for (code, reason, expected) in cases {
      var machine = Stage.awaitingAnswer.machine()
      let actions = machine.received(.goodbye(code, reason: reason), now: Self.now)
      #expect(actions == [.answer(.failure(expected)), .close], "\(code)")
      #expect(RetryPolicy.isRetryable(expected) == (code == .timeout), "\(code)")
    }
    var broken = Stage.awaitingAnswer.machine()
    let violated = broken.errorCaught(.wire(.unexpected(.streamData)))
    #expect(
      violated.contains(
        .answer(.failure(.protocolViolation(reason: "\(WireError.unexpected(.streamData))")))))
    // A TLS handshake the network broke (no alert) may be tried again; one refused may not.
    var interrupted = Self.make(.inviter(context: [], timeout: .seconds(30)))
    let reset = "the connection was reset during the TLS handshake"
    #expect(
      interrupted.errorCaught(.tlsHandshakeInterrupted(reset)) == [
        .answer(.failure(.connectionFailed(reason: reset))), .close,
      ])
  }
}
