import FerryWire
import NIOCore
import NIOEmbedded
import Testing

@testable import Ferry

/// The connection handler in an EmbeddedChannel: it performs what its state machine decides —
/// frames written, callbacks made, timers run on the channel's (virtual) clock, the channel
/// closed.
@Suite("Handlers: connection")
struct ConnectionHandlerTests {
  /// What the handler reported (EmbeddedChannel runs everything on this thread).
  final class Reports: @unchecked Sendable {
    var invites: [ConnectionHandler.IncomingInvite] = []
    var codes: [VerificationCode] = []
    var withdrawn = 0
    var ended: [String] = []
    var failure: InvitationError?
  }

  let local = Identity.generate().fingerprint
  let remote = Identity.generate().fingerprint
  /// The nonce a test advertiser commits to and reveals.
  let advertiserNonce = [UInt8](repeating: 0x22, count: 32)

  /// A handler of `role` alone in an EmbeddedChannel, TLS assumed done.
  func channel(_ role: ConnectionHandler.Role, timeouts: ConnectionTimeouts = .init()) throws -> (
    EmbeddedChannel, ConnectionHandler, Reports
  ) {
    let channel = EmbeddedChannel()
    let handler = ConnectionHandler(
      role: role, localName: "here", localFingerprint: local, timeouts: timeouts,
      budget: LinkBudget(maximumQueuedReplies: 4))
    let reports = Reports()
    handler.onInvite = { reports.invites.append($0) }
    handler.onVerificationCode = { _, code in reports.codes.append(code) }
    handler.onInvitationWithdrawn = { reports.withdrawn += 1 }
    handler.onLinkEnded = { reports.ended.append($0.description) }
    try channel.pipeline.syncOperations.addHandler(handler)
    try channel.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 1)).wait()
    handler.assumeTLSCompleted(peer: remote)
    return (channel, handler, reports)
  }

  func read(_ channel: EmbeddedChannel, _ message: ControlMessage) throws {
    try channel.writeInbound(WireFrame(message, allocator: channel.allocator))
  }

  /// The control messages written so far.
  func written(_ channel: EmbeddedChannel) throws -> [ControlMessage] {
    var messages: [ControlMessage] = []
    while let frame = try channel.readOutbound(as: WireFrame.self) {
      messages.append(try frame.controlMessage())
    }
    return messages
  }

  /// An INVITE with a nonce of 0x11s.
  func invite(timeout: UInt32, context: [UInt8] = []) -> ControlMessage {
    .invite(
      timeoutMilliseconds: timeout, nonce: [UInt8](repeating: 0x11, count: 32), context: context)
  }

  @Test(
    "advertiser: HELLO and COMMIT out, the INVITE reported, REVEAL once admitted, ACCEPT out, PING answered, session frames on"
  )
  func advertiser() throws {
    let (channel, handler, reports) = try channel(.advertiser)
    #expect(
      try written(channel) == [
        .hello(versions: WireProtocol.supportedVersions, displayName: "here")
      ])
    try read(channel, .hello(versions: WireProtocol.supportedVersions, displayName: "there"))
    guard case .commit(let commitment)? = try written(channel).first else {
      Issue.record("no COMMIT")
      return
    }
    #expect(reports.invites.isEmpty)
    try read(channel, invite(timeout: 5000, context: [9]))
    #expect(try written(channel).isEmpty, "REVEAL waits until the invitation is admitted")
    handler.reveal()
    guard case .reveal(let nonce)? = try written(channel).first else {
      Issue.record("no REVEAL")
      return
    }
    #expect(VerificationCode.commitment(to: nonce) == commitment)
    #expect(reports.invites.map(\.context) == [[9]])
    #expect(reports.invites.first?.verificationCode == handler.verificationCode)
    #expect(handler.verificationCode != nil)
    #expect(handler.isPendingDecision && handler.remote?.displayName == "there")
    #expect(handler.accept())
    #expect(try written(channel) == [.accept])
    try read(channel, .ping(5))
    #expect(try written(channel) == [.pong(5)])
    try channel.writeInbound(WireFrame(type: .message, channel: 0, payload: ByteBuffer()))
    #expect(try channel.readInbound(as: WireFrame.self)?.type == .message, "forwarded")
    _ = try channel.finish(acceptAlreadyClosed: true)
    #expect(reports.ended == ["the connection was closed"])
  }

  @Test("an unexpected frame: GOODBYE with the reason, channel closed, the invitation withdrawn")
  func violation() throws {
    let (channel, _, reports) = try channel(.advertiser)
    _ = try written(channel)
    try read(channel, .hello(versions: WireProtocol.supportedVersions, displayName: "there"))
    try read(channel, invite(timeout: 5000))
    _ = try written(channel)  // COMMIT
    try read(channel, .accept)  // only an inviter may be accepted
    guard case .goodbye(.protocolError, let reason)? = try written(channel).first else {
      Issue.record("no GOODBYE")
      return
    }
    #expect(reason.contains("ACCEPT") || reason.contains("accept"), "\(reason)")
    #expect(!channel.isActive)
    #expect(reports.withdrawn == 1)
  }

  @Test("the invitation expires on the channel's clock: withdrawn once, channel closed")
  func expiry() throws {
    let (channel, _, reports) = try channel(.advertiser)
    try read(channel, .hello(versions: WireProtocol.supportedVersions, displayName: "there"))
    try read(channel, invite(timeout: 2000))
    channel.embeddedEventLoop.advanceTime(by: .milliseconds(2900))
    #expect(reports.withdrawn == 0 && channel.isActive)
    channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
    #expect(reports.withdrawn == 1 && !channel.isActive)
  }

  @Test("a silent handshake is closed at its deadline with GOODBYE")
  func handshakeDeadline() throws {
    let (channel, _, _) = try channel(.advertiser)
    _ = try written(channel)
    channel.embeddedEventLoop.advanceTime(by: .seconds(5))
    #expect(try written(channel) == [.goodbye(.timeout, reason: "handshake timed out")])
    #expect(!channel.isActive)
  }

  @Test(
    "inviter: INVITE after COMMIT; the code on REVEAL, before a DECLINE that fails the answer with its reason; heartbeat PINGs"
  )
  func inviter() throws {
    let loop = EmbeddedEventLoop()
    let answer = loop.makePromise(of: PeerID.self)
    let declined = EmbeddedChannel(loop: loop)
    let handler = ConnectionHandler(
      role: .inviter(context: [1], timeout: .seconds(10), answer: answer), localName: "here",
      localFingerprint: local, timeouts: .init(), budget: LinkBudget())
    let shown = Reports()
    handler.onVerificationCode = { _, code in shown.codes.append(code) }
    try declined.pipeline.syncOperations.addHandler(handler)
    try declined.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 1)).wait()
    handler.assumeTLSCompleted(peer: remote)
    try read(declined, .hello(versions: WireProtocol.supportedVersions, displayName: "there"))
    #expect(
      try written(declined) == [
        .hello(versions: WireProtocol.supportedVersions, displayName: "here")
      ], "no INVITE before the advertiser's commitment")
    try read(declined, .commit(VerificationCode.commitment(to: advertiserNonce)))
    guard case .invite(10_000, let nonce, [1])? = try written(declined).last else {
      Issue.record("no INVITE")
      return
    }
    #expect(shown.codes.isEmpty)
    try read(declined, .reveal(advertiserNonce))
    let expected = VerificationCode(
      keyingMaterial: Array(repeating: 0x4B, count: 32), inviterNonce: nonce,
      advertiserNonce: advertiserNonce, fingerprints: remote, local)
    #expect(shown.codes == [expected], "shown before the answer")
    try read(declined, .decline(.declined, reason: "not now"))
    let outcome = Reports()
    answer.futureResult.whenFailure { outcome.failure = $0 as? InvitationError }
    loop.run()
    #expect(outcome.failure == .declined(reason: "not now"))
    #expect(!declined.isActive)

    let connecting = loop.makePromise(of: PeerID.self)
    let (channel, _, reports) = try channel(
      .inviter(context: [], timeout: .seconds(10), answer: connecting))
    try read(channel, .hello(versions: WireProtocol.supportedVersions, displayName: "there"))
    try read(channel, .commit(VerificationCode.commitment(to: advertiserNonce)))
    try read(channel, .reveal(advertiserNonce))
    #expect(reports.codes.count == 1)
    try read(channel, .accept)
    _ = try written(channel)
    channel.embeddedEventLoop.advanceTime(by: .seconds(2))
    #expect(try written(channel) == [.ping(1)])
    // Silence beyond 7 s: the link is dead, reported at once.
    channel.embeddedEventLoop.advanceTime(by: .seconds(6))
    #expect(
      reports.ended == ["the link timed out (no sign of life from the peer for 7 s)"],
      "\(reports.ended)")
    #expect(!channel.isActive)
  }
}
