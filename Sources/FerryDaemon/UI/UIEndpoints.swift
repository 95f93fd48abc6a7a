import FerryLocalSend
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

/// The requests of the daemon's web page (``UIServer``): each passes ``UIGuard`` first; then
/// `/` is the page, `/ui.js` and `/ui.css` its files, `/login?token=…` turns a login secret
/// into the cookie, `/events` is the API's event stream as Server-Sent Events, and
/// `/api/v1/…` is the control API itself (the same routes and answers as on its socket).
/// Called on the connection's event loop.
final class UIEndpoints: HTTPEndpoints {
  typealias Work = APIEndpoints.Call

  private let api: APIEndpoints
  private let logins: UILogins
  private let events: EventLog
  private let port: Int
  /// The pairing code's text (``UIPage/pairing(name:fingerprint:)``).
  private let pairing: String

  init(api: APIEndpoints, logins: UILogins, events: EventLog, port: Int, pairing: String) {
    (self.api, self.logins, self.events, self.port) = (api, logins, events, port)
    self.pairing = pairing
  }

  let extraHeaders = UIPage.securityHeaders

  func decide(_ head: HTTPRequestHead, _ request: FerryLocalSend.HTTPRequest, reply: HTTPReply)
    -> HTTPRequestStateMachine<Work>.Decision
  {
    guard head.uri.utf8.count <= APIEndpoints.targetLimit else {
      return .answer(
        APIEndpoints.answer(APIProblem(414, "too-large", "the request target is too long")))
    }
    let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    let (path, query) = (parts[0], parts.count > 1 ? parts[1] : "")
    let verdict = UIGuard.check(
      UIGuard.Request(
        method: head.method.rawValue, path: path, hosts: head.headers["host"],
        origins: head.headers["origin"], fetchSite: head.headers.first(name: "sec-fetch-site"),
        loopback: UIServer.isLoopback(request.address),
        access: logins.access(
          cookieHeaders: head.headers["cookie"],
          key: head.headers.first(name: Self.keyHeader).map { Substring($0) }
            ?? (path == "/events" ? Self.parameter("key", in: query) : nil), port: port)),
      port: port)
    if case .refuse(let status, let code, let message) = verdict {
      if code == "signed-out" && !path.hasPrefix("/api/") && path != "/events" {
        return .answer(HTTPAnswer(.unauthorized, body: UIPage.signedOut, type: Self.html))
      }
      return .answer(APIEndpoints.answer(APIProblem(status, code, message)))
    }
    if path.hasPrefix("/api/") {
      var inner = head
      inner.uri = String(head.uri.dropFirst(4))
      return api.decide(inner, request, reply: reply)
    }
    guard head.method == .GET else {
      return .answer(
        APIEndpoints.answer(
          APIProblem(405, "method-not-allowed", "\(path) answers GET only"),
          headers: [("allow", "GET")]))
    }
    switch path {
    case "/": return .answer(HTTPAnswer(.ok, body: UIPage.html, type: Self.html))
    case "/ui.js":
      return .answer(HTTPAnswer(.ok, body: UIPage.script, type: "text/javascript; charset=utf-8"))
    case "/icon.svg", "/favicon.ico":
      return .answer(HTTPAnswer(.ok, body: UIPage.icon, type: "image/svg+xml"))
    case "/qr.svg":
      return .answer(
        HTTPAnswer(.ok, body: Array((QRMatrix(pairing)?.svg ?? "").utf8), type: "image/svg+xml"))
    case "/ui-format.js":
      return .answer(HTTPAnswer(.ok, body: UIPage.format, type: "text/javascript; charset=utf-8"))
    case "/ui-upload.js":
      return .answer(HTTPAnswer(.ok, body: UIPage.upload, type: "text/javascript; charset=utf-8"))
    case "/ui.css":
      return .answer(HTTPAnswer(.ok, body: UIPage.style, type: "text/css; charset=utf-8"))
    case UIGuard.loginPath[...]: return .answer(login(query))
    case "/events": return events(head, query)
    default:
      return .answer(APIEndpoints.answer(.notFound("nothing is at \(path)")))
    }
  }

  private static let html = "text/html; charset=utf-8"
  /// The header the page sends its key in (the event stream, which a browser opens without
  /// headers of the page's, takes it as `?key=`).
  static let keyHeader = "x-ferry-key"

  /// `/login?token=…`: the cookie, and the page with its key in the fragment (which the
  /// browser keeps to itself: the page moves it into its own storage and out of the address
  /// bar); or the signed-out page.
  private func login(_ query: Substring) -> HTTPAnswer {
    let token = Self.parameter("token", in: query) ?? ""
    guard let session = logins.redeem(token) else {
      return HTTPAnswer(.forbidden, body: UIPage.signedOut, type: Self.html)
    }
    return HTTPAnswer(
      .seeOther, body: [], type: "text/plain; charset=utf-8",
      headers: [
        // Whatever an earlier holder of this origin left in the browser (a service worker,
        // storage) is gone before the page starts.
        ("clear-site-data", "\"storage\""),
        ("location", "/#key=\(session.key)"),
        (
          "set-cookie",
          "\(UILogins.cookieName(port: port))=\(session.cookie); Path=/; HttpOnly; "
            + "SameSite=Strict"
        ),
      ])
  }

  /// `/events`: the event log from after `Last-Event-ID` (or `?since=`), then as it grows, as
  /// Server-Sent Events (`id:` and one `data:` line, the record `GET /v1/events` gives).
  private func events(_ head: HTTPRequestHead, _ query: Substring)
    -> HTTPRequestStateMachine<Work>.Decision
  {
    let given =
      head.headers.first(name: "last-event-id").map { Substring($0) }
      ?? Self.parameter("since", in: query)
    let since = given.flatMap { Int64($0) }
    if given != nil && (since == nil || since! < 0) {
      return .answer(APIEndpoints.answer(.badRequest("since is a record id, 0 or more")))
    }
    let log = self.events
    let call = APIEndpoints.Call(
      handler: { _, _, _ in
        guard let reader = log.follow(since: since) else {
          throw APIProblem(
            503, "unavailable", "too many clients follow the events; try again later")
        }
        let records = reader.chunks { record in
          ArraySlice("id: \(record.id)\ndata: \(record.line.dropLast())\n\n".utf8)
        }
        // A first line at once, so that the answer's head leaves now (a browser says it is
        // connected only then), not with the first event.
        let chunks = AsyncThrowingStream<ArraySlice<UInt8>, any Error> { continuation in
          continuation.yield(ArraySlice("retry: 3000\n\n".utf8))
          let forward = Task {
            do {
              for try await chunk in records { continuation.yield(chunk) }
              continuation.finish()
            } catch {
              continuation.finish(throwing: error)
            }
          }
          continuation.onTermination = { _ in forward.cancel() }
        }
        var response = HTTPResponse(status: .ok)
        response.headerFields[.contentType] = "text/event-stream; charset=utf-8"
        return (response, HTTPBody(chunks, length: .unknown))
      },
      request: HTTPTypes.HTTPRequest(method: .get, scheme: nil, authority: nil, path: head.uri),
      parameters: [:])
    return .gather(call, limit: 0)
  }

  /// The value of `name` in a query (`a=1&b=2`), as it is (the page's values need no
  /// decoding).
  static func parameter(_ name: String, in query: Substring) -> Substring? {
    for pair in query.split(separator: "&") {
      let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      if parts.count == 2 && parts[0] == name { return parts[1] }
    }
    return nil
  }

  func deliver(
    _ call: Work, body: ByteBuffer, _ request: FerryLocalSend.HTTPRequest, reply: HTTPReply
  ) -> Work? {
    api.deliver(call, body: body, request, reply: reply)
  }

  func feed(
    _ work: Work, piece: ByteBuffer, cost: Int, _ request: FerryLocalSend.HTTPRequest,
    caughtUp: @escaping @Sendable () -> Void
  ) -> Bool {
    api.feed(work, piece: piece, cost: cost, request, caughtUp: caughtUp)
  }

  func bodyEnded(_ work: Work, _ request: FerryLocalSend.HTTPRequest, reply: HTTPReply) -> Work? {
    api.bodyEnded(work, request, reply: reply)
  }

  func overlong(_ work: Work) { api.overlong(work) }

  func abandoned(_ work: Work, _ request: FerryLocalSend.HTTPRequest) {
    api.abandoned(work, request)
  }

  func connection(_ slot: Int, busy: Bool) { api.connection(slot, busy: busy) }

  func requestStarted() { api.requestStarted() }

  func requestAnswered() { api.requestAnswered() }
}
