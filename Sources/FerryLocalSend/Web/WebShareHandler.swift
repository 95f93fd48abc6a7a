import Ferry
import Foundation
import NIOCore
import NIOHTTP1

/// One connection to a ``WebShareServer``: the gate first (``WebGate``), then
/// `prepare-download` (the application asked; one question at a time per connection) and
/// `download` (the session must be this address's; the file must still be the size offered).
/// A request's head and body must come within 10 s; a body over 4 KiB is refused. On the
/// connection's event loop.
final class WebShareHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundOut = HTTPServerResponsePart

  let server: WebShareServer
  let address: String
  /// The connection's place among the server's (``ConnectionSlots``).
  let slot: Int
  private var head: HTTPRequestHead?
  private var bodyBytes = 0
  /// A question or a file is under way: nothing more is read as a request until it ends.
  var busy = false
  /// A request was refused before its end: nothing more is read from this connection.
  private var discarding = false
  private var deadline: Scheduled<Void>?
  /// The question this connection asked, still open (denied if the browser leaves).
  private var asking: WebShareServer.Request?
  weak var context: ChannelHandlerContext?
  /// When the download under way last had a piece written.
  var lastWritten = NIODeadline.now()

  /// The most bytes of a request's body (prepare-download sends none, or `{}`).
  static let maximumBody = 4096
  /// How long a request's head and body may take.
  static let requestDeadline: TimeAmount = .seconds(10)
  /// How long a download may go without a piece written before it is ended.
  static let stall: TimeAmount = .seconds(60)
  /// The bytes handed to `sendfile(2)` at once: each one written is progress.
  static let piece = 1 << 20

  init(server: WebShareServer, address: String, slot: Int) {
    self.server = server
    self.address = address
    self.slot = slot
  }

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    arm(context)
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    deadline?.cancel()
    self.context = nil
  }

  func channelInactive(context: ChannelHandlerContext) {
    // The browser left while the person was asked: the question ends.
    asking?.deny()
    asking = nil
    context.fireChannelInactive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      guard !busy, !discarding, self.head == nil else { return context.close(promise: nil) }
      server.connections.busy(slot)
      self.head = head
      bodyBytes = 0
      arm(context)
    case .body(let body):
      guard !discarding else { return }
      bodyBytes += body.readableBytes
      if bodyBytes > Self.maximumBody {
        // Answered once; the rest of this request is not read (the connection closes).
        head = nil
        discarding = true
        write(.payloadTooLarge, text: "too large", context: context, closing: true)
      }
    case .end:
      guard !discarding, let head else { return }
      self.head = nil
      deadline?.cancel()
      handle(head, context: context)
    }
  }

  func arm(_ context: ChannelHandlerContext) {
    deadline?.cancel()
    let channel = context.channel
    deadline = context.eventLoop.scheduleTask(in: Self.requestDeadline) {
      channel.close(promise: nil)
    }
  }

  private func handle(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
    let (path, query) = LocalSendHTTPHandler.split(head.uri)
    switch server.gate.verdict(
      method: head.method, path: path, headers: head.headers, address: address)
    {
    case .serve(let status, let body, let type):
      write(status, body: Array(body.utf8), type: type, context: context, closing: status != .ok)
    case .pass:
      switch path {
      case LocalSendProtocol.Path.prepareDownload:
        ask(userAgent: head.headers.first(name: "user-agent"), context: context)
      case WebShareServer.Path.downloadAll:
        downloadAll(query, context: context)
      case WebShareServer.Path.downloaded:
        downloaded(query, context: context)
      default:
        download(query, context: context)
      }
    }
  }

  // MARK: prepare-download

  private func ask(userAgent: String?, context: ChannelHandlerContext) {
    let admitted = server.questions.withLock { open in
      guard open < WebShareServer.Limits.openQuestions else { return false }
      open += 1
      return true
    }
    guard admitted else {
      return write(.tooManyRequests, text: "too many questions open", context: context)
    }
    busy = true
    let loop = context.eventLoop
    let handler = NIOLoopBound(self, eventLoop: loop)
    let request = WebShareServer.Request(address: address, userAgent: userAgent) { allowed in
      loop.execute { handler.value.answered(allowed) }
    }
    asking = request
    if case .terminated = server.requestsContinuation.yield(request) { request.deny() }
    let timeout = ResourceOffer.decisionTimeout.components.seconds
    loop.scheduleTask(in: .seconds(timeout)) { request.deny() }
  }

  private func answered(_ allowed: Bool) {
    server.questions.withLock { $0 -= 1 }
    asking = nil
    busy = false
    guard let context else { return }
    guard allowed else { return write(.forbidden, text: "declined", context: context) }
    // One session per address (a reload is let in again under the same one): at most
    // ``WebShareServer/Limits/sessions`` addresses.
    let id = server.sessions.withLock { sessions -> String? in
      if let known = sessions.first(where: { $0.value == address })?.key { return known }
      guard sessions.count < WebShareServer.Limits.sessions else { return nil }
      let id = LocalSendWebAccess.newToken()
      sessions[id] = address
      return id
    }
    guard let id else {
      return write(.serviceUnavailable, text: "too many browsers", context: context)
    }
    server.eventsContinuation.yield(.allowed(address: address))
    write(
      .ok, body: server.listing(session: id), type: "application/json", context: context,
      closing: false)
  }

  // MARK: download

  private func download(_ query: [String: String], context: ChannelHandlerContext) {
    guard let session = query["sessionId"], isOwn(session) else {
      return write(.forbidden, text: "not allowed", context: context)
    }
    guard let id = query["fileId"], id.hasPrefix("f"), let index = Int(id.dropFirst()),
      server.files.indices.contains(index)
    else {
      return write(.notFound, text: "no such file", context: context)
    }
    let file = server.files[index]
    guard let fd = Self.openOffered(file) else {
      return write(.conflict, text: "the file changed since it was offered", context: context)
    }
    let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: fd)
    // Checked every second: a file cut short while it goes out (sendfile(2) would have nothing
    // to send and the loop would spin), or a browser that reads nothing for ``stall`` — its
    // silence never holds the download (or the end of an expired link) open.
    let channel = context.channel
    lastWritten = .now()
    let watch = context.eventLoop.scheduleRepeatedTask(
      initialDelay: .seconds(1), delay: .seconds(1)
    ) { [self] _ in
      var now = stat()
      if fstat(fd, &now) != 0 || UInt64(now.st_size) < file.size
        || NIODeadline.now() - lastWritten > Self.stall
      {
        channel.close(promise: nil)
      }
    }
    server.downloadStarted()
    var headers = HTTPHeaders()
    headers.add(name: "content-type", value: "application/octet-stream")
    headers.add(name: "content-length", value: "\(file.size)")
    headers.add(name: "content-disposition", value: Self.disposition(Self.savedName(file.path)))
    for (name, value) in WebPage.securityHeaders { headers.add(name: name, value: value) }
    busy = true
    context.write(
      wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
      promise: nil)
    let sent = context.eventLoop.makePromise(of: Void.self)
    send(handle, from: 0, to: Int(file.size), then: sent, context: context)
    let (events, address) = (server.eventsContinuation, address)
    sent.futureResult.whenComplete { [weak self, server] result in
      watch.cancel()
      try? handle.close()
      server.downloadEnded()
      self?.busy = false
      if let self { server.connections.idle(self.slot) }
      self?.context.map { self?.arm($0) }
      switch result {
      case .success:
        server.markDownloaded([index], session: session)
        events.yield(.downloaded(path: file.path, bytes: file.size, address: address))
      case .failure(let error):
        events.yield(.failed(path: file.path, reason: ErrorWords.describe(error), address: address))
      }
    }
  }

  /// Sends bytes `offset..<end` of `handle` by `sendfile(2)`, a ``piece`` at a time — each
  /// written one is progress (``lastWritten``) — then the answer's end; `done` ends with it.
  private func send(
    _ handle: NIOFileHandle, from offset: Int, to end: Int, then done: EventLoopPromise<Void>,
    context: ChannelHandlerContext
  ) {
    guard offset < end else {
      return context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
    }
    let next = min(end, offset + Self.piece)
    let written = context.eventLoop.makePromise(of: Void.self)
    let region = FileRegion(fileHandle: handle, readerIndex: offset, endIndex: next)
    context.writeAndFlush(wrapOutboundOut(.body(.fileRegion(region))), promise: written)
    written.futureResult.whenComplete { [self] result in
      switch result {
      case .success:
        lastWritten = .now()
        guard let context = self.context else { return done.fail(ChannelError.ioOnClosedChannel) }
        send(handle, from: next, to: end, then: done, context: context)
      case .failure(let error):
        done.fail(error)
      }
    }
  }

  /// Whether session `id` is this connection's address's (a session works only from where it
  /// was let in).
  func isOwn(_ id: String) -> Bool {
    server.sessions.withLock { $0[id] } == address
  }

  /// Opens offered `file` for reading: never blocking the event loop (a FIFO put in its place),
  /// never following a link put there, and only if it is still the file offered (its device
  /// and inode) and as large; nil otherwise.
  static func openOffered(_ file: WebShareServer.SharedFile) -> Int32? {
    let fd = open(file.url.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
    guard fd >= 0 else { return nil }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
      UInt64(info.st_size) == file.size,
      file.identity.map({ $0 == (UInt64(info.st_dev), UInt64(info.st_ino)) }) ?? true
    else {
      close(fd)
      return nil
    }
    return fd
  }

  /// The name a browser saves offered `path` under: its folders kept in it, joined by " - "
  /// (a browser saves one name, no folders), so that `photos/a.jpg` and `photos/2024/a.jpg`
  /// are two files.
  static func savedName(_ path: String) -> String {
    path.split(separator: "/").joined(separator: " - ")
  }

  /// `attachment` named `name`: an ASCII fallback (`filename`) and the UTF-8 name
  /// (`filename*`, RFC 6266), percent-encoded byte by byte.
  static func disposition(_ name: String) -> String {
    let name = name.isEmpty ? "file" : name
    let ascii = String(
      name.unicodeScalars.map {
        $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" && $0.value != 0x7F
          ? Character($0) : "_"
      })
    var encoded = ""
    for byte in name.utf8 {
      let safe =
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
        || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x2E || byte == 0x5F
      encoded += safe ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
    }
    return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
  }

  // MARK: Answers

  func write(
    _ status: HTTPResponseStatus, text: String, context: ChannelHandlerContext,
    closing: Bool = false
  ) {
    write(
      status, body: Array(text.utf8), type: "text/plain; charset=utf-8", context: context,
      closing: closing)
  }

  func write(
    _ status: HTTPResponseStatus, body: [UInt8], type: String, context: ChannelHandlerContext,
    closing: Bool
  ) {
    let done = HTTPServing.answer(
      status, body: body, type: type, extra: WebPage.securityHeaders, closing: closing,
      context: context)
    let channel = context.channel
    if closing {
      done.whenComplete { _ in channel.close(promise: nil) }
      channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
    } else {
      if !busy { server.connections.idle(slot) }
      arm(context)
    }
  }
}
