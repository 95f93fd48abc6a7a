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

  /// Every state a connection can be in, and how to get there from the start.
  enum Stage: String, CaseIterable, CustomTestStringConvertible {
    case tlsHandshake, awaitingHello, awaitingInvite, awaitingAnswer, pendingDecision
    case connectedInviter, connectedAdvertiser, closed

    var testDescription: String { rawValue }

    var isInviter: Bool {
      [.awaitingAnswer, .connectedInviter].contains(self)
    }

    /// A machine in this stage.
    func machine() -> Machine {
      var machine = Machine(
        role: isInviter ? .inviter(context: [1, 2], timeout: .seconds(30)) : .advertiser,
        localName: "here", timeouts: ConnectionTimeouts())
      if self == .tlsHandshake { return machine }
      _ = machine.tlsCompleted(peer: ConnectionStateMachineTests.remote, alpn: WireProtocol.alpn)
      if self == .awaitingHello { return machine }
      _ = machine.received(
        .hello(versions: [1], displayName: "there"), now: ConnectionStateMachineTests.now)
      switch self {
      case .awaitingInvite, .awaitingAnswer: return machine
      case .connectedInviter:
        _ = machine.received(.accept, now: ConnectionStateMachineTests.now)
        return machine
      default: break
      }
      _ = machine.received(
        .invite(timeoutMilliseconds: 10_000, context: []), now: ConnectionStateMachineTests.now)
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
    ("HELLO", .hello(versions: [1], displayName: "again")),
    ("INVITE", .invite(timeoutMilliseconds: 1000, context: [])),
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
    .awaitingInvite: ["INVITE"],
    .awaitingAnswer: ["ACCEPT", "DECLINE"],
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
          #expect(actions.isEmpty && machine.state == .closed, "\(context)")
        } else if stage == .tlsHandshake {
          // Nothing can arrive before TLS is up; if it did, the connection closes, without a
          // GOODBYE (TLS is not there to carry it).
          #expect(actions.contains(.close) && !Self.isViolation(actions), "\(context)")
        } else if name == "GOODBYE" {
          #expect(actions.contains(.close) && !Self.isViolation(actions), "\(context)")
          #expect(machine.endReason?.contains("bye") == true, "\(context)")
        } else if Self.allowed[stage]!.contains(name) {
          #expect(!Self.isViolation(actions), "\(context)")
        } else {
          #expect(Self.isViolation(actions) && actions.contains(.close), "\(context)")
          if case .connected = before {
            #expect(actions.contains(.linkEnded(machine.endReason!)), "\(context)")
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

  @Test("the handshake: HELLO, INVITE (clamped), the answer, on both ends")
  func handshake() {
    var inviter = Machine(
      role: .inviter(context: [7], timeout: .seconds(86_400)), localName: "me",
      timeouts: ConnectionTimeouts())
    #expect(
      inviter.tlsCompleted(peer: Self.remote, alpn: WireProtocol.alpn) == [
        .send(.hello(versions: WireProtocol.supportedVersions, displayName: "me"))
      ])
    let invite = inviter.received(.hello(versions: [1, 9], displayName: "there"), now: Self.now)
    #expect(
      invite == [
        .cancelDeadline, .peerKnown(Self.peer),
        .send(.invite(timeoutMilliseconds: 120_000, context: [7])),
      ], "a day's wait is clamped to 120 s")
    #expect(inviter.state == .awaitingAnswer(Self.peer, expiresAt: Self.now + .seconds(120)))
    #expect(
      inviter.received(.accept, now: Self.now) == [
        .markConnected, .startHeartbeat, .answer(.success(Self.peer)),
      ])

    var advertiser = Machine(role: .advertiser, localName: "me", timeouts: ConnectionTimeouts())
    _ = advertiser.tlsCompleted(peer: Self.remote, alpn: nil)  // openssl s_client offers none
    #expect(advertiser.received(.hello(versions: [1], displayName: "there"), now: Self.now) == [])
    let invited = advertiser.received(
      .invite(timeoutMilliseconds: .max, context: [3]), now: Self.now)
    #expect(
      invited == [
        .cancelDeadline, .scheduleExpiry(.seconds(121)),
        .invite(.init(peer: Self.peer, context: [3], timeout: .seconds(120))),
      ])
    #expect(advertiser.isPendingDecision)
    #expect(
      advertiser.accept() == [.cancelDeadline, .markConnected, .send(.accept), .startHeartbeat])
    #expect(advertiser.isConnected && advertiser.accept().isEmpty, "accepted once")
  }

  @Test("refusals before the invitation: no common version, a bad name, no ALPN, no certificate")
  func refusals() {
    var old = Stage.awaitingHello.machine()
    let actions = old.received(.hello(versions: [7], displayName: "future"), now: Self.now)
    #expect(
      actions.first == .send(.goodbye(.unsupportedVersion, reason: "no common protocol version")))
    #expect(actions.last == .close)

    var unnamed = Stage.awaitingHello.machine()
    #expect(
      Self.isViolation(unnamed.received(.hello(versions: [1], displayName: ""), now: Self.now)))

    var web = Machine(
      role: .inviter(context: [], timeout: .seconds(5)), localName: "me",
      timeouts: ConnectionTimeouts())
    let refused = web.tlsCompleted(peer: Self.remote, alpn: nil)
    guard case .answer(.failure(.authenticationFailed(let reason)))? = refused.first else {
      Issue.record("\(refused)")
      return
    }
    #expect(reason.contains("ALPN") && refused.last == .close)

    var anonymous = Machine(role: .advertiser, localName: "me", timeouts: ConnectionTimeouts())
    #expect(anonymous.tlsCompleted(peer: nil, alpn: WireProtocol.alpn) == [.close])
    #expect(anonymous.endReason == "authentication failed: the peer presented no certificate")
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
    #expect(dead == [.stopHeartbeat, .linkEnded("no sign of life for 7.0 seconds"), .close])
    #expect(alive.heartbeat(silentFor: .seconds(60)).isEmpty, "reported once")
  }

  @Test("the application's answers and the inviter's withdrawal, in every state")
  func answers() {
    for stage in Stage.allCases {
      var declining = stage.machine()
      let declined = declining.decline(.busy, reason: "busy")
      if stage == .pendingDecision || stage == .awaitingInvite {
        #expect(declined == [.cancelDeadline, .send(.decline(.busy, reason: "busy")), .close])
        #expect(declining.state == .closed)
      } else {
        #expect(declined.isEmpty, "\(stage.rawValue)")
      }
      var withdrawing = stage.machine()
      let withdrawn = withdrawing.withdraw(.cancelled)
      switch stage {
      case .awaitingAnswer:
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
        #expect(rest == [.linkEnded("the connection was closed")])
      case .pendingDecision: #expect(rest == [.invitationWithdrawn])
      case .awaitingAnswer:
        #expect(rest == [.answer(.failure(.connectionFailed(reason: "the connection was closed")))])
      case .tlsHandshake, .awaitingHello, .awaitingInvite, .closed:
        #expect(rest.isEmpty, "\(stage.rawValue): \(rest)")  // the advertiser has no answer
      }
      #expect(machine.state == .closed)
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
        .linkEnded("limit exceeded: too much"), .close,
      ])
    #expect(connected.violation("again").isEmpty)
    #expect(connected.sessionFrame(.message).isEmpty, "nothing forwarded after the end")

    var leaving = Stage.connectedAdvertiser.machine()
    #expect(
      leaving.disconnect(reason: "done") == [
        .send(.goodbye(.normal, reason: "done")), .stopHeartbeat, .linkEnded("done"), .close,
      ])
    var vanished = Stage.connectedAdvertiser.machine()
    _ = vanished.received(.goodbye(.normal, reason: ""), now: Self.now)
    #expect(vanished.errorCaught(.uncleanShutdown) == [.close])
    #expect(vanished.endReason == "the peer closed the connection", "the GOODBYE's reason stays")
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
    var interrupted = Machine(
      role: .inviter(context: [], timeout: .seconds(30)), localName: "here",
      timeouts: ConnectionTimeouts())
    let reset = "the connection was reset during the TLS handshake"
    #expect(
      interrupted.errorCaught(.tlsHandshakeInterrupted(reset)) == [
        .answer(.failure(.connectionFailed(reason: reset))), .close,
      ])
  }
}
