import NIOCore

/// A Sendable handle on one connection and its handler; every call hops to the channel's loop.
final class ConnectionLink: Sendable {
  let channel: Channel
  private let handler: NIOLoopBound<ConnectionHandler>

  /// Call on the channel's event loop.
  init(channel: Channel, handler: ConnectionHandler) {
    self.channel = channel
    self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
  }

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
