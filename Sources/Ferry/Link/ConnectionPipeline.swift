import NIOCore

/// The handlers every Ferry connection runs, in order (docs/ARCHITECTURE.md, "Session layer"),
/// made and installed in one place for both ends. Call on the channel's event loop.
enum ConnectionPipeline {
  /// The outbound buffer a link keeps beyond the kernel's socket buffer: above `high` bytes the
  /// channel reports itself not writable and senders wait (so a peer that does not read cannot
  /// make this side queue data without bound); below `low` they go on.
  static let writeBufferWaterMark = ChannelOptions.Types.WriteBufferWaterMark(
    low: 512 << 10, high: 2 << 20)

  /// Installs TLS, the frame decoder and encoder, `handler` and a new multiplexer sharing
  /// `budget`, and returns the connection's link.
  ///
  /// - Throws: NIO's error if a handler cannot be added.
  static func install(
    on channel: Channel, tls: ChannelHandler, handler: ConnectionHandler, budget: LinkBudget,
    isInviter: Bool
  ) throws -> ConnectionLink {
    try channel.syncOptions?.setOption(.writeBufferWaterMark, value: writeBufferWaterMark)
    let multiplexer = LinkMultiplexer(isInviter: isInviter, budget: budget)
    multiplexer.onViolation = { [weak handler] reason in handler?.closeForViolation(reason) }
    try channel.pipeline.syncOperations.addHandlers([
      tls,
      ByteToMessageHandler(FrameDecoderHandler(budget: budget)),
      FrameEncoderHandler(),
      handler,
      multiplexer,
    ])
    return ConnectionLink(channel: channel, handler: handler, multiplexer: multiplexer)
  }
}
