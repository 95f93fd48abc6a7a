import FerryLocalSend
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime
import Synchronization

/// Writes a generated operation's response: whole when its body's length is known (and at
/// most ``wholeLimit``), else as it comes, chunked — the event stream, which may last hours.
/// A client that does not read is let go: once ``backlogLimit`` bytes wait unwritten for it,
/// its connection is closed. A connection that closes ends the stream (its body is no longer
/// read). Any thread.
enum APIStreamWriter {
  /// The largest body written whole.
  static let wholeLimit = 16 << 20
  /// How many bytes may wait to be written to one client of a stream.
  static let backlogLimit = 1 << 20

  /// Writes `response` and `body` as the answer `reply` is owed.
  static func write(_ response: HTTPResponse, _ body: HTTPBody?, reply: HTTPReply) async {
    let status = HTTPResponseStatus(statusCode: response.status.code)
    let type = response.headerFields[.contentType] ?? "application/json"
    var headers: [(String, String)] = []
    for field in response.headerFields
    where field.name != .contentType && field.name != .contentLength {
      headers.append((field.name.canonicalName, field.value))
    }
    guard let body else {
      return reply(HTTPAnswer(status, body: [], type: type, headers: headers))
    }
    if case .known(let length) = body.length, length <= wholeLimit {
      do {
        let bytes = try await [UInt8](collecting: body, upTo: wholeLimit)
        reply(HTTPAnswer(status, body: bytes, type: type, headers: headers))
      } catch {
        reply(APIEndpoints.answer(APIProblem(500, "internal", "the answer could not be made")))
      }
      return
    }
    stream(status, type: type, headers: headers, body: body, reply: reply)
  }

  /// Writes the head now, then each piece of `body` as it comes, then the end.
  private static func stream(
    _ status: HTTPResponseStatus, type: String, headers: [(String, String)], body: HTTPBody,
    reply: HTTPReply
  ) {
    reply.respond { channel, done in
      var head = HTTPHeaders()
      head.add(name: "content-type", value: type)
      head.add(name: "cache-control", value: "no-store")
      for (name, value) in headers { head.add(name: name, value: value) }
      // No length: NIO's encoder sends it chunked.
      channel.writeAndFlush(
        HTTPServerResponsePart.head(
          HTTPResponseHead(version: .http1_1, status: status, headers: head)),
        promise: nil)
      let waiting = Backlog()
      let task = Task {
        do {
          for try await chunk in body {
            guard waiting.bytes <= backlogLimit else {
              // The client reads nothing: let it go.
              channel.close(promise: nil)
              return done(true)
            }
            let count = chunk.count
            waiting.add(count)
            let buffer = channel.allocator.buffer(bytes: chunk)
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer))).whenComplete {
              _ in waiting.add(-count)
            }
          }
          channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { result in
            if case .failure = result { return done(true) }
            done(false)
          }
        } catch {
          // The body failed (the log let this reader go): the answer is cut short.
          channel.close(promise: nil)
          done(true)
        }
      }
      channel.closeFuture.whenComplete { _ in task.cancel() }
    }
  }
}

/// Bytes handed to a connection and not yet written to it.
private final class Backlog: Sendable {
  private let count = Mutex(0)
  var bytes: Int { count.withLock { $0 } }
  func add(_ delta: Int) { count.withLock { $0 += delta } }
}
