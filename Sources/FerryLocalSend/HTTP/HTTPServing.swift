import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What the LocalSend server and the web page's share server have in common: listening on
/// every address, and writing one whole answer.
enum HTTPServing {
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
