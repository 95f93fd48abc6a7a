import Ferry
import Foundation
import NIOCore
import NIOHTTP1

/// One connection of a ``LocalSendServer``: its requests, one at a time, routed by path —
/// JSON bodies gathered up to their cap, an upload's body handed to the transfer core as it
/// comes, read no faster than the core writes. Every request's head must arrive within
/// ``LocalSendServer/Limits/requestDeadline`` of the connection or of the last answer, and a
/// connection silent for ``LocalSendServer/Limits/idleTimeout`` is closed. On the channel's
/// event loop.
final class LocalSendHTTPHandler: ChannelDuplexHandler, @unchecked Sendable {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundIn = HTTPServerResponsePart
  typealias OutboundOut = HTTPServerResponsePart

  /// Where the connection is.
  private enum State {
    /// Waiting for a request's head.
    case idle
    /// Gathering a JSON body for `route`.
    case json(Route, HTTPRequestHead, ByteBuffer)
    /// Handing an upload's body to the core.
    case upload(Upload)
    /// The answer is out (or on its way); what is left of the body is read and dropped.
    case answered
  }

  private enum Route {
    case register
    case prepareUpload(pin: String?)
    case cancel(session: String?)
  }

  /// An upload under way on this connection.
  private struct Upload {
    let session: UploadSession
    let fileId: String
    let index: Int
    let size: UInt64
    let digest: [UInt8]?
    var received: UInt64 = 0
  }

  /// The most requests one connection may make (then it is closed: a peer cannot hold a
  /// connection slot for ever by asking for /info now and then).
  static let requestsPerConnection = 256
  /// The largest JSON body of a `register` (a device's description) and of a `cancel` (none).
  static let maximumRegisterBytes = 16 << 10

  private let server: LocalSendServer
  private let address: String
  /// The connection's place among the server's (``ConnectionSlots``).
  private let slot: Int
  private let presented: PresentedCertificate
  /// Bytes of the JSON body under way taken from the server's budget (given back when the
  /// body is handled, refused or the connection closes).
  private var jsonHeld = 0
  private var state = State.idle
  /// Whether the request under way has its answer: one answer per request, whatever comes
  /// late (a file's verdict after its body was refused, say) — NIO's server pipeline traps
  /// on a second.
  private var answered = false
  /// Counts requests: an answer computed for one (a decision, a verdict) is never given to
  /// the next.
  private var requestNumber = 0
  /// Whether a request was received and its answer is not flushed yet (counted by the
  /// server, for ``LocalSendServer/drain(timeout:)``).
  private var owesAnswer = false
  /// A web receiver's browser, as its last request named it (`User-Agent`).
  private var userAgent: String?
  /// The session whose prepare-upload waits for its answer on this connection.
  private var preparing: String?
  private var context: ChannelHandlerContext?
  /// The read held back while the core catches up.
  private var readHeld = false
  private var paused = false
  private var deadline: Scheduled<Void>?
  private var idle: Scheduled<Void>?

  init(server: LocalSendServer, address: String, slot: Int, presented: PresentedCertificate) {
    self.server = server
    self.address = address
    self.slot = slot
    self.presented = presented
  }

  // MARK: Channel events

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    armDeadline(context)
    touch(context)
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    deadline?.cancel()
    idle?.cancel()
    releaseJSON()
    self.context = nil
    if owesAnswer {
      owesAnswer = false
      server.requestAnswered()
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    if let id = preparing {
      // The sender left while its files were asked about: the question ends, and the next
      // sender is not busy for the rest of it.
      preparing = nil
      if let session = server.session(id) {
        server.end(id)
        session.offer?.senderReset(reason: "the sender left before the answer")
      } else {
        // A text message, which has no upload session: its question ends with it.
        server.withdrawText(id)
      }
    }
    if case .upload(let upload) = state {
      // Cut off mid-file: the sender's session cannot go on (the protocol cannot resume it).
      upload.session.connectionEnded(context.channel)
      upload.session.offer?.senderReset(reason: "the upload of a file was cut off")
    }
    state = .answered
    context.fireChannelInactive()
  }

  func read(context: ChannelHandlerContext) {
    // Answers the peer does not read are not piled up: the next request waits for them.
    if paused || !context.channel.isWritable {
      readHeld = true
    } else {
      context.read()
    }
  }

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    if context.channel.isWritable, !paused, readHeld {
      readHeld = false
      context.read()
    }
    context.fireChannelWritabilityChanged()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    touch(context)
    switch unwrapInboundIn(data) {
    case .head(let head): received(head, context: context)
    case .body(let body): received(body, context: context)
    case .end: ended(context: context)
    }
  }

  // MARK: Requests

  private func received(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
    guard case .idle = state, requestNumber < Self.requestsPerConnection else {
      return close(context)
    }
    answered = false
    requestNumber &+= 1
    server.connectionBusy(slot)
    if !owesAnswer {
      owesAnswer = true
      server.requestStarted()
    }
    deadline?.cancel()
    let (path, query) = Self.split(head.uri)
    if let gate = server.webGate {
      userAgent = head.headers.first(name: "user-agent")
      let verdict = gate.verdict(
        method: head.method, path: path, headers: head.headers, address: address)
      if case .serve(let status, let body, let type) = verdict {
        // A refused request's body is not read: its connection closes after the answer.
        return write(
          status, body: Array(body.utf8), type: type, context: context,
          closing: head.method != .GET || status != .ok)
      }
    }
    switch (head.method, path) {
    case (.GET, LocalSendProtocol.Path.info), (.POST, LocalSendProtocol.Path.info),
      (.GET, LocalSendProtocol.Path.infoV1):
      respond(.ok, json: LocalSendJSON.encode(server.device.answer), context: context)
    case (.POST, LocalSendProtocol.Path.register):
      startJSON(.register, head, context: context)
    case (.POST, LocalSendProtocol.Path.prepareUpload):
      startJSON(.prepareUpload(pin: query["pin"]), head, context: context)
    case (.POST, LocalSendProtocol.Path.cancel):
      startJSON(.cancel(session: query["sessionId"]), head, context: context)
    case (.POST, LocalSendProtocol.Path.upload):
      startUpload(head, query: query, context: context)
    default:
      respond(.notFound, text: "not found", context: context)
    }
  }

  private func startJSON(_ route: Route, _ head: HTTPRequestHead, context: ChannelHandlerContext) {
    if let length = head.headers.first(name: "content-length").flatMap({ Int($0) }),
      length > Self.limit(of: route)
    {
      return respond(.payloadTooLarge, text: "body too large", context: context, closing: true)
    }
    if case .prepareUpload(let pin) = route {
      guard server.configuration.receives else {
        // A sender's or a browser's server is there for discovery's `register` only.
        return respond(
          .forbidden, text: "this device is not receiving", context: context, closing: true)
      }
      // Refused before 4 MiB of JSON is read and decoded on the event loop.
      switch server.sessions.withLock({ $0.screen(from: address, pin: pin) }) {
      case .busy:
        return respond(
          .conflict, text: "another session is under way", context: context, closing: true)
      case .pinRequired:
        return respond(.unauthorized, text: "PIN required", context: context, closing: true)
      case .tooManyAttempts:
        return respond(
          .tooManyRequests, text: "too many wrong PINs", context: context, closing: true)
      case .start: break
      }
    }
    state = .json(route, head, context.channel.allocator.buffer(capacity: 0))
    // The body too must come within the request's deadline.
    armDeadline(context)
  }

  private func received(_ body: ByteBuffer, context: ChannelHandlerContext) {
    switch state {
    case .json(let route, let head, var buffer):
      guard buffer.readableBytes + body.readableBytes <= Self.limit(of: route) else {
        return respond(.payloadTooLarge, text: "body too large", context: context, closing: true)
      }
      // Held against the server's budget for bodies in flight, counted in all.
      guard server.jsonBytes.take(body.readableBytes) else {
        return respond(
          .serviceUnavailable, text: "too many requests at once; try again", context: context,
          closing: true)
      }
      jsonHeld += body.readableBytes
      state = .answered  // (no copy of the buffer while it grows)
      var body = body
      buffer.writeBuffer(&body)
      state = .json(route, head, buffer)
    case .upload(var upload):
      let count = UInt64(body.readableBytes)
      guard upload.size - upload.received >= count else {
        upload.session.offer?.violation(
          "the upload of file \(upload.fileId) is longer than announced")
        return respond(
          .badRequest, text: "the body is longer than the size announced", context: context,
          closing: true)
      }
      upload.received += count
      state = .upload(upload)
      // A piece costs the core a write and a queue entry whatever its size: each counts as at
      // least 4 KiB against the window, and a small one is copied so that it does not keep
      // the whole read buffer alive.
      let cost = max(body.readableBytes, 4096)
      let piece =
        body.readableBytes < 4096 ? context.channel.allocator.buffer(buffer: body) : body
      // Counted before the core can grant it back.
      let loop = context.eventLoop
      let mayRead = upload.session.handed(cost) { [weak self] in
        let handler = self
        loop.execute { handler?.resume() }
      }
      upload.session.offer?.data(upload.index, .bytes(piece), credit: cost)
      if !mayRead { paused = true }
    case .idle, .answered:
      break
    }
  }

  private func ended(context: ChannelHandlerContext) {
    switch state {
    case .json(let route, _, let buffer):
      state = .answered
      deadline?.cancel()
      let body = Array(buffer.readableBytesView)
      releaseJSON()
      handle(route, body: body, context: context)
    case .upload(let upload):
      state = .answered
      finishUpload(upload, context: context)
    case .answered:
      // The request is over: the next may come (within the deadline).
      state = .idle
      becameIdle()
      armDeadline(context)
    case .idle:
      break
    }
  }

  /// No request is under way: the connection's slot may go to a new connection, and no JSON
  /// body is held.
  private func becameIdle() {
    releaseJSON()
    server.connectionIdle(slot)
  }

  /// Gives the JSON body's bytes back to the server's budget.
  private func releaseJSON() {
    if jsonHeld > 0 {
      server.jsonBytes.give(jsonHeld)
      jsonHeld = 0
    }
  }

  // MARK: JSON endpoints

  private func handle(_ route: Route, body: [UInt8], context: ChannelHandlerContext) {
    switch route {
    case .register: register(body, context: context)
    case .prepareUpload(let pin): prepare(body, pin: pin, context: context)
    case .cancel(let session): cancel(session, context: context)
    }
  }

  private func register(_ body: [UInt8], context: ChannelHandlerContext) {
    let device: LocalSendDevice
    do throws(LocalSendJSONError) {
      device = try LocalSendJSON.decode(LocalSendDevice.self, from: body).validated()
    } catch {
      return respond(.badRequest, text: error.description, context: context)
    }
    guard claimsPresentedCertificate(device) else {
      return respond(
        .forbidden, text: "the fingerprint is not the certificate's", context: context)
    }
    server.registrationsContinuation.yield(
      LocalSendRegistration(device: device, address: address, proven: provenKey != nil))
    respond(.ok, json: LocalSendJSON.encode(server.device.answer), context: context)
  }

  private func prepare(_ body: [UInt8], pin: String?, context: ChannelHandlerContext) {
    let request: PrepareUploadRequest
    do throws(LocalSendJSONError) {
      request = try LocalSendJSON.decode(PrepareUploadRequest.self, from: body).validated()
    } catch {
      let status: HTTPResponseStatus
      if case .tooLarge = error { status = .payloadTooLarge } else { status = .badRequest }
      return respond(status, text: error.description, context: context)
    }
    guard claimsPresentedCertificate(request.info) else {
      return respond(
        .forbidden, text: "the fingerprint is not the certificate's", context: context)
    }
    let id = UploadSession.token()
    let verdict = server.sessions.withLock {
      $0.prepare(from: address, pin: pin, id: id, owner: provenKey)
    }
    switch verdict {
    case .busy: return respond(.conflict, text: "another session is under way", context: context)
    case .pinRequired: return respond(.unauthorized, text: "PIN required", context: context)
    case .tooManyAttempts:
      return respond(.tooManyRequests, text: "too many wrong PINs", context: context)
    case .start: break
    }
    let sender =
      server.webGate == nil
      ? LocalSendSender(
        device: request.info, address: address,
        proven: server.tls == nil ? nil : presented.value)
      : LocalSendSender(browserAt: address, userAgent: userAgent, claim: request.info.fingerprint)
    let promise = context.eventLoop.makePromise(of: UploadSession.Preparation.self)
    let number = requestNumber
    preparing = id
    promise.futureResult.whenSuccess { [weak self, server] preparation in
      self?.preparing = nil
      guard let self, let context = self.context, self.requestNumber == number else {
        // The sender left before its answer: the session ends (an accepted one would wait
        // for uploads that never come).
        if case .accepted = preparation {
          server.session(id)?.offer?.senderReset(reason: "the sender left before the answer")
        }
        server.end(id)
        return
      }
      self.prepared(preparation, session: id, context: context)
    }
    LocalSendOffers.start(request, id: id, sender: sender, server: server, answer: promise)
  }

  private func prepared(
    _ preparation: UploadSession.Preparation, session id: String, context: ChannelHandlerContext
  ) {
    switch preparation {
    case .accepted(let uploads) where uploads.isEmpty:
      // Nothing wanted (every file skipped): nothing to upload, as LocalSend says it.
      server.end(id)
      respond(.noContent, text: "", context: context)
    case .accepted(let uploads):
      guard server.sessions.withLock({ $0.accepted(id, uploads: uploads) }) else {
        return respond(.conflict, text: "the session is over", context: context)
      }
      let tokens = uploads.mapValues(\.token)
      respond(
        .ok, json: LocalSendJSON.encode(PrepareUploadResponse(sessionId: id, files: tokens)),
        context: context)
    case .text(let shown):
      server.end(id)
      respond(shown ? .noContent : .forbidden, text: shown ? "" : "declined", context: context)
    case .refused(let status, let reason):
      server.end(id)
      respond(status, text: reason, context: context)
    }
  }

  private func cancel(_ session: String?, context: ChannelHandlerContext) {
    guard
      let id = server.sessions.withLock({
        $0.mayCancel(session, from: address, certificate: provenKey)
      })
    else {
      // Nothing of this sender's to cancel: as LocalSend answers it.
      return respond(.ok, text: "", context: context)
    }
    // Over at once for the sender (its next prepare-upload is not busy); the core cleans up
    // behind it.
    // A text being asked about has no upload session: it stays the one question until it is
    // answered (or times out), so that cancels cannot pile up questions.
    guard let current = server.session(id) else { return respond(.ok, text: "", context: context) }
    server.end(id)
    current.offer?.senderReset(reason: "the sender cancelled")
    respond(.ok, text: "", context: context)
  }

  // MARK: Uploads

  private func startUpload(
    _ head: HTTPRequestHead, query: [String: String], context: ChannelHandlerContext
  ) {
    guard let sessionId = query["sessionId"], let fileId = query["fileId"],
      let token = query["token"]
    else { return respond(.badRequest, text: "missing parameters", context: context) }
    let admission = server.sessions.withLock {
      $0.admit(fileId, token: token, session: sessionId, from: address, certificate: provenKey)
    }
    switch admission {
    case .unknownSession:
      return respond(.conflict, text: "no such session", context: context)
    case .forbidden: return respond(.forbidden, text: "forbidden", context: context)
    case .tooMany:
      return respond(
        .tooManyRequests, text: "too many uploads at once", context: context, closing: true)
    case .alreadyUploaded: return respond(.conflict, text: "uploaded already", context: context)
    case .upload(let accepted):
      guard let session = server.session(sessionId) else {
        return respond(.conflict, text: "no such session", context: context)
      }
      if let length = head.headers.first(name: "content-length").flatMap({ UInt64($0) }),
        length > accepted.size
      {
        session.offer?.violation("the upload of file \(fileId) is longer than announced")
        return respond(
          .badRequest, text: "the body is longer than the size announced", context: context,
          closing: true)
      }
      state = .upload(
        Upload(
          session: session, fileId: fileId, index: accepted.index, size: accepted.size,
          digest: accepted.digest))
      let promise = context.eventLoop.makePromise(of: UploadSession.Verdict.self)
      session.uploadStarted(accepted.index, on: context.channel, verdict: promise)
      let number = requestNumber
      let server = self.server
      promise.futureResult.whenSuccess { [weak self] verdict in
        // The file's upload is over even when its connection is gone (a sender that sent the
        // whole body and closed before the answer): its slot among the uploads at once is
        // given back here, not only when the answer can be written.
        server.sessions.withLock { $0.uploadEnded(fileId, session: sessionId, retry: false) }
        guard let self, let context = self.context, self.requestNumber == number else { return }
        self.uploaded(verdict, context: context)
      }
    }
  }

  private func finishUpload(_ upload: Upload, context: ChannelHandlerContext) {
    // A shorter body is a failed file: the core finds it short of its size.
    upload.session.offer?.fileEnded(upload.index, digest: upload.digest)
  }

  private func uploaded(_ verdict: UploadSession.Verdict, context: ChannelHandlerContext) {
    if case .upload(let upload) = state { upload.session.connectionEnded(context.channel) }
    switch verdict {
    case .stored: respond(.ok, text: "", context: context)
    case .corrupt(let reason), .failed(let reason):
      respond(verdict.status, text: reason, context: context)
    }
  }

  // MARK: Answers

  private func respond(
    _ status: HTTPResponseStatus, json: [UInt8], context: ChannelHandlerContext
  ) {
    write(status, body: json, type: "application/json", context: context, closing: false)
  }

  private func respond(
    _ status: HTTPResponseStatus, text: String, context: ChannelHandlerContext,
    closing: Bool = false
  ) {
    write(
      status, body: Array(text.utf8), type: "text/plain; charset=utf-8", context: context,
      closing: closing)
  }

  private func write(
    _ status: HTTPResponseStatus, body: [UInt8], type: String, context: ChannelHandlerContext,
    closing: Bool
  ) {
    guard self.context != nil, !answered else { return }
    answered = true
    var closing = closing || requestNumber >= Self.requestsPerConnection
    switch state {
    case .json, .upload: closing = true  // answered before its body ended: nothing to wait for
    case .idle, .answered: break
    }
    let done = HTTPServing.answer(
      status, body: body, type: type,
      extra: server.webGate == nil ? [] : WebPage.securityHeaders, closing: closing,
      context: context)
    if owesAnswer {
      owesAnswer = false
      done.whenComplete { [server] _ in server.requestAnswered() }
    }
    switch state {
    case .json, .upload:
      state = .answered
      releaseJSON()
    case .answered:
      // The body was all read: ready for the next request.
      state = .idle
      becameIdle()
      armDeadline(context)
    case .idle:
      becameIdle()
      armDeadline(context)
    }
    let channel = context.channel
    if closing {
      done.whenComplete { _ in channel.close(promise: nil) }
      // A peer that reads nothing keeps the answer from being flushed: closed anyway.
      channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
    }
    resume()
  }

  // MARK: Deadlines and pacing

  private func resume() {
    guard paused, let context else { return }
    paused = false
    if readHeld {
      readHeld = false
      context.read()
    }
  }

  /// The next request's head (or this one's JSON body) must come within the deadline: a
  /// trickle does not extend it.
  private func armDeadline(_ context: ChannelHandlerContext) {
    deadline?.cancel()
    deadline = context.eventLoop.scheduleTask(
      in: .nanoseconds(
        Int64(LocalSendServer.Limits.requestDeadline.components.seconds) * 1_000_000_000)
    ) { [weak self] in
      guard let self, let context = self.context else { return }
      switch self.state {
      case .idle, .json: self.close(context)
      case .upload, .answered: break
      }
    }
  }

  /// The connection said something: its silence is counted from now.
  private func touch(_ context: ChannelHandlerContext) {
    idle?.cancel()
    idle = context.eventLoop.scheduleTask(
      in: .nanoseconds(Int64(LocalSendServer.Limits.idleTimeout.components.seconds) * 1_000_000_000)
    ) { [weak self] in
      guard let self, let context = self.context else { return }
      // Waiting for the core (a decision, a verdict, its writes catching up) is not the
      // connection's silence; a body left to drop after the answer is.
      if case .answered = self.state, !self.answered { return }
      if self.paused { return self.touch(context) }
      self.close(context)
    }
  }

  private func close(_ context: ChannelHandlerContext) {
    context.close(promise: nil)
  }

  /// The key this connection's certificate proved: nil over plain HTTP (nothing proves
  /// anything there) or when it presented none.
  private var provenKey: Fingerprint? {
    server.tls == nil ? nil : presented.value
  }

  /// Whether a device's claimed fingerprint is its certificate's (over HTTPS with a client
  /// certificate); a sender with no certificate (allowed only for older apps) and plain HTTP
  /// claim what they like, and are unverified.
  private func claimsPresentedCertificate(_ device: LocalSendDevice) -> Bool {
    guard server.tls != nil else { return true }
    guard let proven = presented.value else {
      // None recorded (a resumed TLS session runs no verify callback, or an older app): only
      // where unverified senders are allowed.
      return server.configuration.senderCheck == .allowUnverified
    }
    return device.fingerprint.uppercased() == proven.hexString
  }

  /// The largest body `route` takes.
  private static func limit(of route: Route) -> Int {
    switch route {
    case .prepareUpload: return LocalSendProtocol.Limits.maximumJSONBytes
    case .register: return maximumRegisterBytes
    case .cancel: return 1024
    }
  }

  /// A request target's path and its query's parameters (percent-decoded; the first of a
  /// repeated name).
  static func split(_ uri: String) -> (path: String, query: [String: String]) {
    let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    let path = String(parts.first ?? "")
    var query: [String: String] = [:]
    if parts.count == 2 {
      for pair in parts[1].split(separator: "&") {
        let item = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(item[0]).removingPercentEncoding ?? String(item[0])
        let value = item.count == 2 ? (String(item[1]).removingPercentEncoding ?? "") : ""
        if query[name] == nil { query[name] = value }
      }
    }
    return (path, query)
  }
}
