import NIOCore

/// A Sendable handle on one connection and its handlers; every call hops to the channel's loop.
final class ConnectionLink: Sendable {
  let channel: Channel
  private let handler: NIOLoopBound<ConnectionHandler>
  private let multiplexer: NIOLoopBound<LinkMultiplexer>

  /// When the peer last sent anything on this link.
  let activity: LinkActivity
  /// The certificate the peer presented in the TLS handshake.
  let peerCertificate: PeerCertificateSlot

  /// Call on the channel's event loop.
  init(channel: Channel, handler: ConnectionHandler, multiplexer: LinkMultiplexer) {
    self.channel = channel
    self.activity = handler.activity
    self.peerCertificate = handler.peerCertificate
    self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    self.multiplexer = NIOLoopBound(multiplexer, eventLoop: channel.eventLoop)
  }

  /// Runs `body` with the multiplexer on the event loop and returns the future it makes.
  func withMultiplexer<T: Sendable>(
    _ body: @escaping @Sendable (LinkMultiplexer) -> EventLoopFuture<T>
  ) -> EventLoopFuture<T> {
    let multiplexer = self.multiplexer
    return channel.eventLoop.flatSubmit { body(multiplexer.value) }
  }

  /// Runs `body` with the multiplexer on the event loop, without waiting.
  func onMultiplexer(_ body: @escaping @Sendable (LinkMultiplexer) -> Void) {
    let multiplexer = self.multiplexer
    channel.eventLoop.execute { body(multiplexer.value) }
  }

  /// Runs `body` with the multiplexer on the event loop, then `then` (still on the loop, after
  /// what `body` wrote was flushed to the socket).
  func onMultiplexer(
    _ body: @escaping @Sendable (LinkMultiplexer) -> Void, then: @escaping @Sendable () -> Void
  ) {
    let multiplexer = self.multiplexer
    channel.eventLoop.execute {
      body(multiplexer.value)
      then()
    }
  }

  /// The multiplexer, for code already on the event loop.
  var multiplexerOnLoop: LinkMultiplexer { multiplexer.value }

  /// The connection handler, for code already on the event loop.
  var handlerOnLoop: ConnectionHandler { handler.value }

  /// Runs `body` with the handler on its event loop.
  func withHandler<T: Sendable>(_ body: @escaping @Sendable (ConnectionHandler) -> T) async -> T {
    let handler = self.handler
    return try! await channel.eventLoop.submit { body(handler.value) }.get()
  }

  /// Runs `body` with the handler on its event loop, without waiting.
  func onHandler(_ body: @escaping @Sendable (ConnectionHandler) -> Void) {
    let handler = self.handler
    channel.eventLoop.execute { body(handler.value) }
  }
}
