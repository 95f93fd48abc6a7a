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
    var withdrawn = 0
    var ended: [String] = []
    var failure: InvitationError?
  }

  let remote = Identity.generate().fingerprint

  /// A handler of `role` alone in an EmbeddedChannel, TLS assumed done.
  func channel(_ role: ConnectionHandler.Role, timeouts: ConnectionTimeouts = .init()) throws -> (
    EmbeddedChannel, ConnectionHandler, Reports
  ) {
    let channel = EmbeddedChannel()
    let handler = ConnectionHandler(
      role: role, localName: "here", timeouts: timeouts, budget: LinkBudget(maximumQueuedReplies: 4)
    )
    let reports = Reports()
    handler.onInvite = { reports.invites.append($0) }
    handler.onInvitationWithdrawn = { reports.withdrawn += 1 }
    handler.onLinkEnded = { reports.ended.append($0) }
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

  @Test("advertiser: HELLO out, the INVITE reported, ACCEPT out, PING answered, session frames on")
  func advertiser() throws {
    let (channel, handler, reports) = try channel(.advertiser)
    #expect(
      try written(channel) == [
        .hello(versions: WireProtocol.supportedVersions, displayName: "here")
      ])
    try read(channel, .hello(versions: [1], displayName: "there"))
    try read(channel, .invite(timeoutMilliseconds: 5000, context: [9]))
    #expect(reports.invites.map(\.context) == [[9]])
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
    try read(channel, .hello(versions: [1], displayName: "there"))
    try read(channel, .invite(timeoutMilliseconds: 5000, context: []))
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
    try read(channel, .hello(versions: [1], displayName: "there"))
    try read(channel, .invite(timeoutMilliseconds: 2000, context: []))
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

  @Test("inviter: INVITE after HELLO; DECLINE fails the answer with its reason; heartbeat PINGs")
  func inviter() throws {
    let loop = EmbeddedEventLoop()
    let answer = loop.makePromise(of: PeerID.self)
    let declined = EmbeddedChannel(loop: loop)
    let handler = ConnectionHandler(
      role: .inviter(context: [1], timeout: .seconds(10), answer: answer), localName: "here",
      timeouts: .init(), budget: LinkBudget())
    try declined.pipeline.syncOperations.addHandler(handler)
    try declined.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 1)).wait()
    handler.assumeTLSCompleted(peer: remote)
    try read(declined, .hello(versions: [1], displayName: "there"))
    #expect(
      try written(declined).last == .invite(timeoutMilliseconds: 10_000, context: [1]))
    try read(declined, .decline(.declined, reason: "not now"))
    let outcome = Reports()
    answer.futureResult.whenFailure { outcome.failure = $0 as? InvitationError }
    loop.run()
    #expect(outcome.failure == .declined(reason: "not now"))
    #expect(!declined.isActive)

    let connecting = loop.makePromise(of: PeerID.self)
    let (channel, _, reports) = try channel(
      .inviter(context: [], timeout: .seconds(10), answer: connecting))
    try read(channel, .hello(versions: [1], displayName: "there"))
    try read(channel, .accept)
    _ = try written(channel)
    channel.embeddedEventLoop.advanceTime(by: .seconds(2))
    #expect(try written(channel) == [.ping(1)])
    // Silence beyond 7 s: the link is dead, reported at once.
    channel.embeddedEventLoop.advanceTime(by: .seconds(6))
    #expect(reports.ended == ["no sign of life for 7.0 seconds"], "\(reports.ended)")
    #expect(!channel.isActive)
  }
}
