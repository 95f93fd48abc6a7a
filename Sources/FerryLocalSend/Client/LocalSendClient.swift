import Ferry
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// Why a request to a LocalSend device failed before it had an answer.
public enum LocalSendRequestError: Error, Sendable, CustomStringConvertible {
  /// Nothing answers at the address (refused, unreachable, timed out connecting).
  case unreachable(String)
  /// The device's certificate is not the one it announced (or it presented none).
  case wrongCertificate(String)
  /// The connection failed or was cut mid-request.
  case failed(String)
  /// No answer within the time allowed.
  case timedOut
  /// The answer was larger than a LocalSend answer may be.
  case answerTooLarge

  /// The error in words.
  public var description: String {
    switch self {
    case .unreachable(let why): return "unreachable: \(why)"
    case .wrongCertificate(let why):
      return "the device's certificate is not the one announced (\(why))"
    case .failed(let why): return "the connection failed: \(why)"
    case .timedOut: return "no answer in time"
    case .answerTooLarge: return "the answer was too large"
    }
  }
}

/// HTTP(S) requests to a LocalSend device: a connection per request, or one kept for several
/// (``connect(host:port:expecting:plainHTTP:)``: uploads), TLS 1.3 with Ferry's certificate as the client's and the device's pinned to the
/// fingerprint it announced — inside the handshake — unless it is an older app's, which nothing
/// announced. Answers are read up to 4 MiB. Any task.
struct LocalSendClient: Sendable {
  /// An answer: its status and body.
  struct Answer: Sendable {
    let status: HTTPResponseStatus
    let body: [UInt8]
    /// The certificate the device presented (nil over plain HTTP).
    let certificate: Fingerprint?
  }

  /// What a request sends.
  enum Body: Sendable {
    case none
    case json([UInt8])
    /// Bytes in memory, sent as an upload's body (a text uploaded as a file).
    case bytes([UInt8])
    /// A file's bytes, read as they go (`progress` gets each count sent, on any thread).
    case file(URL, size: UInt64, progress: @Sendable (Int) -> Void)
  }

  let tls: LocalSendTLS
  /// How long to wait for an answer once the request is sent (a prepare-upload waits for a
  /// person).
  var answerTimeout: Duration = .seconds(30)

  /// Sends `method path` to `host:port` on a connection of its own, over HTTPS unless
  /// `plainHTTP`, the device's certificate required to be `expected` (nil: any, recorded).
  ///
  /// - Throws: ``LocalSendRequestError``.
  func request(
    _ method: HTTPMethod, host: String, port: Int, path: String, body: Body = .none,
    expecting expected: Fingerprint?, plainHTTP: Bool = false, answerTimeout: Duration? = nil
  ) async throws(LocalSendRequestError) -> Answer {
    let connection = try await connect(
      host: host, port: port, expecting: expected, plainHTTP: plainHTTP)
    defer { connection.close() }
    return try await connection.request(
      method, path: path, body: body, answerTimeout: answerTimeout ?? self.answerTimeout)
  }

  /// Opens a connection to `host:port` for requests one after another (HTTP keep-alive).
  ///
  /// - Throws: ``LocalSendRequestError/unreachable(_:)``.
  func connect(host: String, port: Int, expecting expected: Fingerprint?, plainHTTP: Bool)
    async throws(LocalSendRequestError) -> LocalSendConnection
  {
    let presented = PresentedCertificate()
    let collector = AnswerCollector(handshaken: plainHTTP)
    let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .connectTimeout(.seconds(5))
      .channelInitializer { [tls] channel in
        do {
          let sync = channel.pipeline.syncOperations
          if !plainHTTP {
            try sync.addHandler(tls.clientHandler(expecting: expected, recording: presented))
          }
          try sync.addHTTPClientHandlers()
          try sync.addHandler(collector)
          return channel.eventLoop.makeSucceededVoidFuture()
        } catch {
          return channel.eventLoop.makeFailedFuture(error)
        }
      }
    do {
      let channel = try await bootstrap.connect(host: host, port: port).get()
      return LocalSendConnection(
        channel: channel, collector: collector, presented: presented, host: host, port: port,
        expected: expected)
    } catch {
      throw .unreachable("\(host):\(port): \(Self.describe(error))")
    }
  }

  /// Writes the request: its head, then its body (a file in 256 KiB pieces, at most 4 in
  /// flight).
  static func send(
    _ method: HTTPMethod, path: String, host: String, body: Body, on channel: any Channel,
    watch: RequestWatch
  ) async throws {
    var headers = HTTPHeaders()
    headers.add(name: "host", value: host.contains(":") ? "[\(host)]" : host)
    headers.add(name: "user-agent", value: "ferry")
    switch body {
    case .none: headers.add(name: "content-length", value: "0")
    case .json(let bytes):
      headers.add(name: "content-type", value: "application/json")
      headers.add(name: "content-length", value: "\(bytes.count)")
    case .bytes(let bytes):
      headers.add(name: "content-type", value: "application/octet-stream")
      headers.add(name: "content-length", value: "\(bytes.count)")
    case .file(_, let size, _):
      headers.add(name: "content-type", value: "application/octet-stream")
      headers.add(name: "content-length", value: "\(size)")
    }
    let head = HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)
    channel.write(HTTPClientRequestPart.head(head), promise: nil)
    switch body {
    case .none: break
    case .json(let bytes), .bytes(let bytes):
      channel.write(
        HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: bytes))),
        promise: nil)
    case .file(let url, let size, let progress):
      try await sendFile(url, size: size, on: channel) { count in
        watch.progressed(at: .now)
        progress(count)
      }
    }
    try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
  }

  private static func sendFile(
    _ url: URL, size: UInt64, on channel: any Channel, progress: @escaping @Sendable (Int) -> Void
  ) async throws {
    let fd = open(url.path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      throw LocalSendRequestError.failed("\(url.path): \(String(cString: strerror(errno)))")
    }
    defer { close(fd) }
    var sent: UInt64 = 0
    var inFlight: [EventLoopFuture<Void>] = []
    while sent < size {
      let want = Int(min(UInt64(256 << 10), size - sent))
      let offset = sent
      let allocator = channel.allocator
      let piece: ByteBuffer = try await NIOThreadPool.singleton.runIfActive {
        var buffer = allocator.buffer(capacity: want)
        var failure: Int32 = 0
        let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw in
          while true {
            let count = pread(fd, raw.baseAddress, want, off_t(offset))
            // A signal that came during the read is not the file's fault: read again.
            if count < 0 && errno == EINTR { continue }
            failure = count < 0 ? errno : 0
            return max(0, count)
          }
        }
        guard count > 0 else {
          throw LocalSendRequestError.failed(
            failure == 0
              ? "\(url.path) is shorter than it was"
              : "\(url.path): \(String(cString: strerror(failure)))")
        }
        return buffer
      }
      sent += UInt64(piece.readableBytes)
      let count = piece.readableBytes
      let promise = channel.eventLoop.makePromise(of: Void.self)
      channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(piece)), promise: promise)
      let written = promise.futureResult
      written.whenSuccess { progress(count) }
      inFlight.append(written)
      if inFlight.count >= 4 { try await inFlight.removeFirst().get() }
    }
    for future in inFlight { try await future.get() }
  }

  static func isCertificateRefusal(_ error: any Error) -> Bool {
    if let error = error as? NIOSSLError, case .handshakeFailed = error { return true }
    return "\(error)".contains("CERTIFICATE_VERIFY_FAILED")
  }

  static func describe(_ error: any Error) -> String {
    ErrorWords.describe(error)
  }
}

/// Gathers the answers of a connection's requests, one after another (head and body, at most
/// 4 MiB each): ``expect(on:)`` before each request. On the channel's event loop.
final class AnswerCollector: ChannelInboundHandler, @unchecked Sendable {
  typealias InboundIn = HTTPClientResponsePart

  /// Whether the connection's TLS handshake is done (from the start over plain HTTP): until
  /// it is, a request has ``RequestWatch/handshake`` to get there.
  let handshaken: Atomic<Bool>

  init(handshaken: Bool) {
    self.handshaken = Atomic(handshaken)
  }

  /// The answer waited for, and why no more will come (set once the connection failed or
  /// closed): one lock, so that a close between the two is never missed.
  private let slot = Mutex<
    (promise: EventLoopPromise<(HTTPResponseHead, [UInt8])>?, ended: LocalSendRequestError?)
  >((nil, nil))
  private var head: HTTPResponseHead?
  private var body: [UInt8] = []

  /// The next answer (call before the request is written).
  func expect(on loop: any EventLoop) -> EventLoopFuture<(HTTPResponseHead, [UInt8])> {
    let made = loop.makePromise(of: (HTTPResponseHead, [UInt8]).self)
    let ended = slot.withLock { slot -> LocalSendRequestError? in
      if let ended = slot.ended { return ended }
      slot.promise = made
      return nil
    }
    if let ended { made.fail(ended) }
    return made.futureResult
  }

  /// Takes the answer waited for, if any.
  private func takePromise() -> EventLoopPromise<(HTTPResponseHead, [UInt8])>? {
    slot.withLock { slot in
      defer { slot.promise = nil }
      return slot.promise
    }
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      self.head = head
      body = []
    case .body(let buffer):
      guard body.count + buffer.readableBytes <= 4 << 20 else {
        fail(.answerTooLarge)
        return context.close(promise: nil)
      }
      body.append(contentsOf: buffer.readableBytesView)
    case .end:
      guard let head else { return fail(.failed("an answer without a head")) }
      let answer = (head, body)
      (self.head, body) = (nil, [])
      let waiting = takePromise()
      // An answer nobody asked for: the device is not speaking HTTP as it should.
      guard let waiting else { return context.close(promise: nil) }
      waiting.succeed(answer)
    }
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
      handshaken.store(true, ordering: .releasing)
    }
    context.fireUserInboundEventTriggered(event)
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    takePromise()?.fail(error)
    context.close(promise: nil)
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail(.failed("the device closed the connection"))
    context.fireChannelInactive()
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    // A connection that failed before it was active (refused, timed out) never became
    // inactive: its wait ends here.
    fail(.failed("the connection ended before an answer"))
  }

  /// Ends the wait with `error` (when no answer came first); later requests fail at once.
  func fail(_ error: LocalSendRequestError) {
    let waiting = slot.withLock { slot in
      defer { slot.promise = nil }
      slot.ended = slot.ended ?? error
      return slot.promise
    }
    waiting?.fail(error)
  }
}

/// When a request is overdue: a TLS handshake not done within ``handshake``, no progress for
/// ``stall`` while it is sent (a body's pieces: a phone may stop reading while it writes), or
/// no answer within its timeout once it is. Any thread.
final class RequestWatch: Sendable {
  /// How long a request may make no progress while it is sent.
  static let stall: Duration = .seconds(60)
  /// How long a connection's TLS handshake may take, from the first request on it.
  static let handshake: Duration = .seconds(30)

  private let timeout: Duration
  private let started = ContinuousClock.now
  private let state:
    Mutex<(lastProgress: ContinuousClock.Instant, sentAt: ContinuousClock.Instant?)>

  init(timeout: Duration) {
    self.timeout = timeout
    state = Mutex((ContinuousClock.now, nil))
  }

  /// Bytes were written.
  func progressed(at now: ContinuousClock.Instant) {
    state.withLock { $0.lastProgress = now }
  }

  /// The request is all written: the answer's time starts.
  func sent(at now: ContinuousClock.Instant) {
    state.withLock { $0.sentAt = now }
  }

  /// Why the request has waited too long, if it has; `handshaken`: whether its connection's
  /// TLS handshake is done.
  func overdue(at now: ContinuousClock.Instant, handshaken: Bool = true) -> LocalSendRequestError? {
    if !handshaken, now - started > Self.handshake { return .timedOut }
    return state.withLock { state in
      if let sentAt = state.sentAt {
        return now - sentAt > timeout ? .timedOut : nil
      }
      return now - state.lastProgress > Self.stall ? .timedOut : nil
    }
  }
}
