import Ferry
import Foundation
import NIOCore
import NIOHTTP1

/// What a ``WebShareServer``'s requests do, one connection's (``HTTPConnectionHandler`` reads
/// them): the gate first (``WebGate``), then `prepare-download` (the application is asked),
/// `download` (the session must be this address's; the file must still be the one offered),
/// `download-all` (every file as one zip) and `downloaded` (what the session has). A request's
/// body is at most 4 KiB. On the connection's event loop; a question's answer comes later,
/// from any thread.
final class WebShareEndpoints: HTTPEndpoints {
  /// What a request is about.
  enum Work: Sendable {
    /// A request let in by the gate, for `route`, its body gathered (and not used).
    case request(HTTPRoutes.Route, query: [String: String], userAgent: String?)
    /// The question a `prepare-download` asked, still open: denied if the browser leaves.
    case asking(WebShareServer.Request)
  }

  /// The most bytes of a request's body (prepare-download sends none, or `{}`).
  static let maximumBody = 4096
  /// How long a download may go without a piece written before it is ended.
  static let stall: Duration = .seconds(60)

  let server: WebShareServer

  /// The requests of one connection to `server`.
  init(server: WebShareServer) {
    self.server = server
  }

  var extraHeaders: [(String, String)] { WebPage.securityHeaders }

  func decide(_ head: HTTPRequestHead, _ request: HTTPRequest, reply: HTTPReply)
    -> HTTPRequestStateMachine<Work>.Decision
  {
    let (path, query) = HTTPRoutes.split(head.uri)
    let verdict = server.gate.verdict(
      method: head.method, path: path, headers: head.headers, address: request.address)
    if case .serve(let status, let body, let type) = verdict {
      return .answer(HTTPAnswer(status, body: Array(body.utf8), type: type, closing: status != .ok))
    }
    guard let match = HTTPRoutes.match(head.method, path, on: .webShare) else {
      return .answer(.text(.notFound, "not found"))
    }
    if let length = head.headers.first(name: "content-length").flatMap({ Int($0) }),
      length > Self.maximumBody
    {
      return .answer(.text(.payloadTooLarge, "too large", closing: true))
    }
    return .gather(
      .request(match.route, query: query, userAgent: head.headers.first(name: "user-agent")),
      limit: Self.maximumBody)
  }

  func deliver(_ work: Work, body: ByteBuffer, _ request: HTTPRequest, reply: HTTPReply) -> Work? {
    guard case .request(let route, let query, let userAgent) = work else { return nil }
    switch route {
    case .prepareDownload:
      return ask(userAgent: userAgent, request, reply: reply)
    case .download:
      download(query, request, reply: reply)
    case .downloadAll:
      downloadAll(query, request, reply: reply)
    case .downloaded:
      reply(downloaded(query, from: request.address))
    default:
      reply(.text(.notFound, "not found"))
    }
    return nil
  }

  func feed(
    _ work: Work, piece: ByteBuffer, cost: Int, _ request: HTTPRequest,
    caughtUp: @escaping @Sendable () -> Void
  ) -> Bool { true }

  func bodyEnded(_ work: Work, _ request: HTTPRequest, reply: HTTPReply) -> Work? { nil }

  func overlong(_ work: Work) {}

  func abandoned(_ work: Work, _ request: HTTPRequest) {
    // The browser left while the person was asked: the question ends.
    if case .asking(let question) = work { question.deny() }
  }

  func connection(_ slot: Int, busy: Bool) {
    if busy { server.connections.busy(slot) } else { server.connections.idle(slot) }
  }

  func requestStarted() {}

  func requestAnswered() {}

  // MARK: prepare-download

  /// Asks the application whether this browser may download (at most
  /// ``WebShareServer/Limits/openQuestions`` questions open at once, each denied after the
  /// decision's time). Returns what the request waits on.
  private func ask(userAgent: String?, _ request: HTTPRequest, reply: HTTPReply) -> Work? {
    let admitted = server.questions.withLock { open in
      guard open < WebShareServer.Limits.openQuestions else { return false }
      open += 1
      return true
    }
    guard admitted else {
      reply(.text(.tooManyRequests, "too many questions open"))
      return nil
    }
    let address = request.address
    let question = WebShareServer.Request(address: address, userAgent: userAgent) {
      [server] allowed in
      server.questions.withLock { $0 -= 1 }
      reply(Self.answered(allowed, server: server, address: address))
    }
    if case .terminated = server.requestsContinuation.yield(question) { question.deny() }
    Task {
      try? await Task.sleep(for: ResourceOffer.decisionTimeout)
      question.deny()
    }
    return .asking(question)
  }

  /// The answer to a browser the person let in (or not): its session and the files.
  private static func answered(_ allowed: Bool, server: WebShareServer, address: String)
    -> HTTPAnswer
  {
    guard allowed else { return .text(.forbidden, "declined") }
    // One session per address (a reload is let in again under the same one): at most
    // ``WebShareServer/Limits/sessions`` addresses.
    let id = server.sessions.withLock { sessions -> String? in
      if let known = sessions.first(where: { $0.value == address })?.key { return known }
      guard sessions.count < WebShareServer.Limits.sessions else { return nil }
      let id = LocalSendWebAccess.newToken()
      sessions[id] = address
      return id
    }
    guard let id else { return .text(.serviceUnavailable, "too many browsers") }
    server.eventsContinuation.yield(.allowed(address: address))
    return .json(.ok, server.listing(session: id))
  }

  // MARK: downloaded

  /// `downloaded?sessionId=`: the ids of the files this session downloaded whole (the page
  /// marks them).
  private func downloaded(_ query: [String: String], from address: String) -> HTTPAnswer {
    guard let session = query["sessionId"], isOwn(session, address) else {
      return .text(.forbidden, "not allowed")
    }
    let ids = server.downloadedFiles(session: session).sorted().map { "\"f\($0)\"" }
    return .json(.ok, Array("{\"downloaded\":[\(ids.joined(separator: ","))]}".utf8))
  }

  /// Whether session `id` is `address`'s (a session works only from where it was let in).
  func isOwn(_ id: String, _ address: String) -> Bool {
    server.sessions.withLock { $0[id] } == address
  }
}
