import Ferry
import NIOCore
import NIOHTTP1

/// What a ``LocalSendServer``'s requests do, one connection's (``HTTPConnectionHandler``
/// reads them): `info`, `register`, `prepare-upload` (screened for the PIN and a session under
/// way before its body is read), `cancel`, and each accepted file's `upload`, its body handed
/// to the transfer core as it comes, read no faster than the core writes — and, for a web
/// receiver, the page and its gate (``WebGate``) first. On the connection's event loop; the
/// answers to a decision or a verdict come later, from any thread.
final class LocalSendEndpoints: HTTPEndpoints {
  /// What a request is about.
  enum Work: Sendable {
    /// A device's description (gathered).
    case register
    /// A prepare-upload (gathered); `userAgent`: a browser's, as its request named it.
    case prepareUpload(pin: String?, userAgent: String?)
    /// A cancel (gathered).
    case cancel(session: String?)
    /// A prepare-upload asked about: the session whose answer it waits for.
    case preparing(session: String)
    /// An accepted file's body, handed to the core as it comes.
    case upload(Upload)
    /// An accepted file's body, all handed over: its verdict is waited for.
    case verdict(Upload)
  }

  /// An upload under way on this connection.
  struct Upload: Sendable {
    let session: UploadSession
    let fileId: String
    let index: Int
    let digest: [UInt8]?
  }

  /// The largest JSON body of a `register` (a device's description).
  static let maximumRegisterBytes = 16 << 10
  /// The largest body of a `cancel` (none is read).
  static let maximumCancelBytes = 1024

  let server: LocalSendServer
  /// The certificate this connection's client presented, as the TLS handshake recorded it.
  private let presented: PresentedCertificate

  /// The requests of one connection whose client certificate `presented` records.
  init(server: LocalSendServer, presented: PresentedCertificate) {
    self.server = server
    self.presented = presented
  }

  var extraHeaders: [(String, String)] { server.webGate == nil ? [] : WebPage.securityHeaders }

  func decide(_ head: HTTPRequestHead, _ request: HTTPRequest, reply: HTTPReply)
    -> HTTPRequestStateMachine<Work>.Decision
  {
    let (path, query) = HTTPRoutes.split(head.uri)
    if let gate = server.webGate {
      let verdict = gate.verdict(
        method: head.method, path: path, headers: head.headers, address: request.address)
      if case .serve(let status, let body, let type) = verdict {
        // A refused request's body is not read: its connection closes after the answer.
        return .answer(
          HTTPAnswer(
            status, body: Array(body.utf8), type: type,
            closing: head.method != .GET || status != .ok))
      }
    }
    let server: HTTPRoutes.Server = self.server.webGate == nil ? .localSend : .webReceive
    guard let match = HTTPRoutes.match(head.method, path, on: server) else {
      return .answer(.text(.notFound, "not found"))
    }
    switch match.route {
    case .info:
      return .answer(.json(.ok, LocalSendJSON.encode(self.server.device.answer)))
    case .register:
      return gather(.register, head, limit: Self.maximumRegisterBytes)
    case .prepareUpload:
      if let refusal = screen(pin: query["pin"], from: request.address) {
        return .answer(refusal)
      }
      return gather(
        .prepareUpload(pin: query["pin"], userAgent: head.headers.first(name: "user-agent")),
        head, limit: LocalSendProtocol.Limits.maximumJSONBytes)
    case .cancel:
      return gather(.cancel(session: query["sessionId"]), head, limit: Self.maximumCancelBytes)
    case .upload:
      return startUpload(head, query: query, request, reply: reply)
    default:
      return .answer(.text(.notFound, "not found"))
    }
  }

  /// Gathers `work`'s body of at most `limit` bytes — refused at once when its length says
  /// more.
  private func gather(_ work: Work, _ head: HTTPRequestHead, limit: Int)
    -> HTTPRequestStateMachine<Work>.Decision
  {
    if let length = head.headers.first(name: "content-length").flatMap({ Int($0) }), length > limit
    {
      return .answer(.text(.payloadTooLarge, "body too large", closing: true))
    }
    return .gather(work, limit: limit)
  }

  /// A prepare-upload refused before 4 MiB of JSON is read and decoded on the event loop:
  /// this device not receiving, another session under way, a PIN missing or wrong.
  private func screen(pin: String?, from address: String) -> HTTPAnswer? {
    guard server.configuration.receives else {
      // A sender's or a browser's server is there for discovery's `register` only.
      return .text(.forbidden, "this device is not receiving", closing: true)
    }
    switch server.sessions.withLock({ $0.screen(from: address, pin: pin, now: .now) }) {
    case .busy: return .text(.conflict, "another session is under way", closing: true)
    case .pinRequired: return .text(.unauthorized, "PIN required", closing: true)
    case .tooManyAttempts: return .text(.tooManyRequests, "too many wrong PINs", closing: true)
    case .start: return nil
    }
  }

  func deliver(_ work: Work, body: ByteBuffer, _ request: HTTPRequest, reply: HTTPReply) -> Work? {
    let body = Array(body.readableBytesView)
    switch work {
    case .register:
      reply(register(body, from: request.address))
    case .prepareUpload(let pin, let userAgent):
      return prepare(body, pin: pin, userAgent: userAgent, request, reply: reply)
    case .cancel(let session):
      reply(cancel(session, from: request.address))
    case .preparing, .upload, .verdict:
      break
    }
    return nil
  }

  func feed(
    _ work: Work, piece: ByteBuffer, cost: Int, _ request: HTTPRequest,
    caughtUp: @escaping @Sendable () -> Void
  ) -> Bool {
    guard case .upload(let upload) = work else { return true }
    // Counted before the core can grant it back.
    let mayRead = upload.session.handed(cost, resume: caughtUp)
    upload.session.offer?.data(upload.index, .bytes(piece), credit: cost)
    return mayRead
  }

  func bodyEnded(_ work: Work, _ request: HTTPRequest, reply: HTTPReply) -> Work? {
    guard case .upload(let upload) = work else { return nil }
    // A shorter body is a failed file: the core finds it short of its size.
    upload.session.offer?.fileEnded(upload.index, digest: upload.digest)
    return .verdict(upload)
  }

  func overlong(_ work: Work) {
    guard case .upload(let upload) = work else { return }
    upload.session.offer?.violation("the upload of file \(upload.fileId) is longer than announced")
  }

  func abandoned(_ work: Work, _ request: HTTPRequest) {
    switch work {
    case .preparing(let id):
      // The sender left while its files were asked about: the question ends, and the next
      // sender is not busy for the rest of it.
      server.withdraw(id, reason: "the sender left before the answer")
    case .upload(let upload):
      // Cut off mid-file: the sender's session cannot go on (the protocol cannot resume it).
      upload.session.connectionEnded(request.channel)
      upload.session.offer?.senderReset(reason: "the upload of a file was cut off")
    case .verdict(let upload):
      upload.session.connectionEnded(request.channel)
    case .register, .prepareUpload, .cancel:
      break
    }
  }

  func connection(_ slot: Int, busy: Bool) {
    if busy { server.connectionBusy(slot) } else { server.connectionIdle(slot) }
  }

  func requestStarted() { server.requestStarted() }

  func requestAnswered() { server.requestAnswered() }

  // MARK: The certificate

  /// The key this connection's certificate proved: nil over plain HTTP (nothing proves
  /// anything there) or when it presented none.
  var provenKey: Fingerprint? {
    server.tls == nil ? nil : presented.value
  }

  /// Whether a device's claimed fingerprint is its certificate's (over HTTPS with a client
  /// certificate); a sender with no certificate (allowed only for older apps) and plain HTTP
  /// claim what they like, and are unverified.
  func claimsPresentedCertificate(_ device: LocalSendDevice) -> Bool {
    guard server.tls != nil else { return true }
    guard let proven = presented.value else {
      // None recorded (a resumed TLS session runs no verify callback, or an older app): only
      // where unverified senders are allowed.
      return server.configuration.senderCheck == .allowUnverified
    }
    return device.fingerprint.uppercased() == proven.hexString
  }

  /// The sender of a prepare-upload from `address` describing itself as `device`: a browser
  /// (nothing proven) on a web receiver, else a LocalSend app with the key its certificate
  /// proved.
  func sender(_ device: LocalSendDevice, at address: String, userAgent: String?)
    -> LocalSendSender
  {
    server.webGate == nil
      ? LocalSendSender(
        device: device, address: address, proven: server.tls == nil ? nil : presented.value)
      : LocalSendSender(browserAt: address, userAgent: userAgent, claim: device.fingerprint)
  }
}
