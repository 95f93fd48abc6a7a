import FerryWire
import NIOCore
import NIOEmbedded
import Testing

@testable import Ferry

/// A link's handlers live as long as its channel, and not a moment longer: a receiver meets
/// connections without end, and anything one leaves behind adds up.
@Suite("Handlers: lifetime")
struct HandlerLifetimeTests {
  final class Weak: @unchecked Sendable {
    weak var value: AnyObject?
    init(_ value: AnyObject) { self.value = value }
  }

  /// The connection handler and the multiplexer of a link in an EmbeddedChannel, connected to
  /// an inviter when `connect`, then closed; returns weak references to both.
  func linkClosed(connect: Bool) throws -> (Weak, Weak) {
    let budget = LinkBudget(maximumQueuedReplies: 8)
    let handler = ConnectionHandler(
      role: .advertiser, localName: "here", localFingerprint: Identity.generate().fingerprint,
      timeouts: .init(), budget: budget)
    let multiplexer = LinkMultiplexer(isInviter: false, budget: budget)
    multiplexer.onViolation = { [weak handler] reason in handler?.closeForViolation(reason) }
    let channel = EmbeddedChannel()
    try channel.pipeline.syncOperations.addHandlers([
      ByteToMessageHandler(FrameDecoderHandler(budget: budget)), FrameEncoderHandler(), handler,
      multiplexer,
    ])
    handler.onInvite = { _ in _ = handler.accept() }
    channel.pipeline.fireChannelActive()
    handler.assumeTLSCompleted(peer: Identity.generate().fingerprint)
    if connect {
      let hello = ControlMessage.hello(
        versions: WireProtocol.supportedVersions, displayName: "there")
      let invite = ControlMessage.invite(
        timeoutMilliseconds: 1000, nonce: Array(repeating: 1, count: 32), context: [])
      try channel.writeInbound(ByteBuffer(bytes: hello.frame.encoded + invite.frame.encoded))
      #expect(handler.isConnected)
    }
    _ = try channel.finish(acceptAlreadyClosed: true)
    return (Weak(handler), Weak(multiplexer))
  }

  @Test("a closed link frees its handlers, connected or not", arguments: [false, true])
  func freed(connect: Bool) throws {
    let (handler, multiplexer) = try linkClosed(connect: connect)
    #expect(handler.value == nil, "the connection handler outlived its channel")
    #expect(multiplexer.value == nil, "the multiplexer outlived its channel")
  }
}
