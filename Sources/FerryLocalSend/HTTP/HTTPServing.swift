import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What the LocalSend server, the web page's share server and the daemon's control API have
/// in common: listening on every address, a connection's pipeline, and writing one whole
/// answer.
package enum HTTPServing {
  /// Sets `channel` up as one connection of a server whose requests `endpoints` do: NIO's
  /// HTTP/1.1 parsing (a malformed request gets a 400 and the connection closes), the
  /// connection closed after `idleTimeout` of silence (waiting for an endpoint is not
  /// silence), and its requests, one at a time, under `limits` (``HTTPRequestStateMachine``).
  /// `slot` is its place among the server's connections; gathered bodies draw on `budget`.
  /// On the channel's event loop (its child channel initializer).
  ///
  /// - Throws: NIO's error when a handler cannot be added (the channel closed).
  package static func serve<Endpoints: HTTPEndpoints>(
    _ channel: any Channel, endpoints: Endpoints, address: String, slot: Int,
    budget: ByteBudget?, limits: HTTPRequestStateMachine<Endpoints.Work>.Limits,
    idleTimeout: Duration
  ) throws {
    let sync = channel.pipeline.syncOperations
    try sync.configureHTTPServerPipeline(withErrorHandling: true)
    try sync.addHandler(IdleStateHandler(allTimeout: TimeAmount(idleTimeout)))
    try sync.addHandler(
      HTTPConnectionHandler(
        endpoints: endpoints, address: address, slot: slot, budget: budget, limits: limits))
  }

  /// Listens on `port` on every IPv6 and IPv4 address (IPv4 only where the machine has no
  /// IPv6), each connection set up by `initialize`.
  ///
  /// - Throws: NIO's error when the port cannot be bound.
  static func listen(
    port: UInt16, initialize: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
  ) async throws -> any Channel {
    let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.backlog, value: 64)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer(initialize)
    do {
      return try await bootstrap.bind(host: "::", port: Int(port)).get()
    } catch {
      return try await bootstrap.bind(host: "0.0.0.0", port: Int(port)).get()
    }
  }

  /// Writes one answer — its head (`status`, `type`, the length, `extra` headers, and
  /// `Connection: close` when `closing`), `body` and its end — and flushes it. On `context`'s
  /// event loop.
  ///
  /// - Returns: The end's write: complete once the answer is handed to the kernel.
  static func answer(
    _ status: HTTPResponseStatus, body: [UInt8], type: String, extra: [(String, String)],
    closing: Bool, context: ChannelHandlerContext
  ) -> EventLoopFuture<Void> {
    var headers = HTTPHeaders()
    headers.add(name: "content-type", value: type)
    for (name, value) in extra { headers.add(name: name, value: value) }
    headers.add(name: "content-length", value: "\(body.count)")
    if closing { headers.add(name: "connection", value: "close") }
    let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
    context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
    if !body.isEmpty {
      let buffer = context.channel.allocator.buffer(bytes: body)
      context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
    }
    let finished = context.eventLoop.makePromise(of: Void.self)
    context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: finished)
    return finished.futureResult
  }
}
