import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIRuntime

/// How the `ferry` commands that talk to the daemon (`status`, `offers`, `events`, `send
/// --later`, …) reach it: each request on a connection of its own to the API's Unix socket
/// (OpenAPIRuntime's `ClientTransport`, for the generated `Client`). The response's body comes
/// as it arrives (the event stream does not end). Any thread.
package struct UnixSocketTransport: ClientTransport {
  /// Why a request did not reach the daemon.
  package enum Failure: Error, Sendable, CustomStringConvertible {
    /// Nothing answers on the socket (no daemon runs).
    case noDaemon(String)
    /// The connection failed or closed before an answer.
    case connection(String)

    package var description: String {
      switch self {
      case .noDaemon(let path): "no ferry daemon answers on \(path)"
      case .connection(let reason): "the daemon's connection failed: \(reason)"
      }
    }
  }

  /// The socket.
  package let path: String
  /// How long connecting and the response's head may take.
  package let timeout: Duration

  /// A transport to the daemon listening on `path`.
  package init(path: String, timeout: Duration = .seconds(10)) {
    (self.path, self.timeout) = (path, timeout)
  }

  /// Sends `request` with `body`; the response, its body streamed.
  ///
  /// - Throws: ``Failure``.
  package func send(
    _ request: HTTPTypes.HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
  ) async throws -> (HTTPResponse, HTTPBody?) {
    var bytes: [UInt8]?
    if let body { bytes = try await [UInt8](collecting: body, upTo: 1 << 20) }
    let (chunks, sink) = AsyncThrowingStream<ArraySlice<UInt8>, any Error>.makeStream()
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let headPromise = loop.makePromise(of: HTTPResponseHead.self)
    let channel: any Channel
    do {
      channel = try await ClientBootstrap(group: loop)
        .connectTimeout(TimeAmount(timeout))
        .channelInitializer { channel in
          channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHTTPClientHandlers()
            try channel.pipeline.syncOperations.addHandler(
              ResponseReader(head: headPromise, body: sink))
          }
        }
        .connect(unixDomainSocketPath: path).get()
    } catch {
      headPromise.fail(Failure.noDaemon(path))
      throw Failure.noDaemon(path)
    }
    sink.onTermination = { _ in channel.close(promise: nil) }
    var headers = HTTPHeaders()
    headers.add(name: "host", value: "localhost")
    for field in request.headerFields { headers.add(name: field.name.rawName, value: field.value) }
    if let bytes { headers.replaceOrAdd(name: "content-length", value: "\(bytes.count)") }
    let head = HTTPRequestHead(
      version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue),
      uri: request.path ?? "/", headers: headers)
    channel.write(HTTPClientRequestPart.head(head), promise: nil)
    if let bytes, !bytes.isEmpty {
      channel.write(
        HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: bytes))),
        promise: nil)
    }
    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
    let seconds = timeout.components.seconds
    let late = loop.scheduleTask(in: TimeAmount(timeout)) {
      headPromise.fail(Failure.connection("no answer within \(seconds) s"))
    }
    let response: HTTPResponseHead
    do {
      response = try await headPromise.futureResult.get()
      late.cancel()
    } catch {
      channel.close(promise: nil)
      throw error as? Failure ?? Failure.connection("\(error)")
    }
    var fields = HTTPFields()
    for (name, value) in response.headers {
      guard let name = HTTPField.Name(name) else { continue }
      fields.append(HTTPField(name: name, value: value))
    }
    let answer = HTTPResponse(status: .init(code: Int(response.status.code)), headerFields: fields)
    let length = response.headers.first(name: "content-length").flatMap { Int64($0) }
    return (answer, HTTPBody(chunks, length: length.map { .known($0) } ?? .unknown))
  }
}

/// Hands a response's head and body to the transport as they are read. On the channel's
/// event loop.
private final class ResponseReader: ChannelInboundHandler, Sendable {
  typealias InboundIn = HTTPClientResponsePart
  private let head: EventLoopPromise<HTTPResponseHead>
  private let body: AsyncThrowingStream<ArraySlice<UInt8>, any Error>.Continuation

  init(
    head: EventLoopPromise<HTTPResponseHead>,
    body: AsyncThrowingStream<ArraySlice<UInt8>, any Error>.Continuation
  ) {
    (self.head, self.body) = (head, body)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let response): head.succeed(response)
    case .body(let buffer): body.yield(ArraySlice(buffer.readableBytesView))
    case .end:
      body.finish()
      context.close(promise: nil)
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    head.fail(UnixSocketTransport.Failure.connection("it closed before answering"))
    body.finish(throwing: UnixSocketTransport.Failure.connection("it closed"))
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    head.fail(UnixSocketTransport.Failure.connection("\(error)"))
    body.finish(throwing: UnixSocketTransport.Failure.connection("\(error)"))
    context.close(promise: nil)
  }
}
