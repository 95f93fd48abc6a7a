import FerryLocalSend
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime
import Synchronization

/// The control API's requests on one server (``APIServer``): each request's body gathered (at
/// most ``APIEndpoints/bodyLimit``, or what ``APIEndpoints/bodies`` says of its operation) —
/// or, for an operation that takes a file, fed to it as it comes (``StreamedBody``) — then
/// handed to its generated operation on a task of its own, whose answer is written whole — or,
/// for a body of unknown length (the event stream), as it comes (``APIStreamWriter``). A request whose connection closes has its task
/// cancelled. Errors become the API's JSON `Error`: a request the generated code cannot read is
/// a 400, never a 500. Called on the connection's event loop.
final class APIEndpoints: HTTPEndpoints {
  /// A request under way: its operation's task, once it runs.
  final class Call: Sendable {
    let handler: APIRoutes.Handler
    let request: HTTPTypes.HTTPRequest
    let parameters: [String: Substring]
    /// Its body as it comes, for an operation that streams it (``APIEndpoints/streamed``).
    let streamed: StreamedBody?
    let task = Mutex<Task<Void, Never>?>(nil)

    init(
      handler: @escaping APIRoutes.Handler, request: HTTPTypes.HTTPRequest,
      parameters: [String: Substring], streamed: StreamedBody? = nil
    ) {
      (self.handler, self.request, self.parameters) = (handler, request, parameters)
      self.streamed = streamed
    }

    func cancel() { task.withLock { $0 }?.cancel() }
  }

  typealias Work = Call

  /// The largest request body (a `POST /v1/sends` of 1000 long paths fits).
  static let bodyLimit = 64 * 1024

  /// How an operation takes its body, when not gathered within ``bodyLimit``.
  enum Body {
    /// Gathered, up to this many bytes.
    case gathered(limit: Int)
    /// Handed over as it comes, exactly its `Content-Length` (``StreamedBody``).
    case streamed
  }

  /// The operations (`METHOD template`) whose body is not the usual: an upload's list of up to
  /// 10 000 files, and a browser's file.
  static let bodies: [String: Body] = [
    "POST /v1/uploads": .gathered(limit: 4 << 20),
    "PUT /v1/uploads/{id}/files/{index}": .streamed,
  ]
  /// The bytes of gathered bodies both servers (the socket's and the page's) hold at once.
  static let held = ByteBudget(8 << 20)
  /// The longest request target.
  static let targetLimit = 8 * 1024

  private let routes: APIRoutes
  private let slots: ConnectionSlots

  init(routes: APIRoutes, slots: ConnectionSlots) {
    (self.routes, self.slots) = (routes, slots)
  }

  let extraHeaders: [(String, String)] = [("cache-control", "no-store")]

  func decide(_ head: HTTPRequestHead, _ request: FerryLocalSend.HTTPRequest, reply: HTTPReply)
    -> HTTPRequestStateMachine<Call>.Decision
  {
    guard head.uri.utf8.count <= Self.targetLimit else {
      return .answer(Self.answer(APIProblem(414, "too-large", "the request target is too long")))
    }
    let target = Substring(head.uri)
    let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
    guard let method = HTTPTypes.HTTPRequest.Method(head.method.rawValue) else {
      return .answer(Self.answer(APIProblem(405, "method-not-allowed", "unknown method")))
    }
    switch routes.match(method: method, path: path) {
    case .notFound:
      return .answer(
        Self.answer(.notFound("nothing is at \(path) (the API is described at /v1/openapi.yaml)")))
    case .wrongMethod(let allowed):
      return .answer(
        Self.answer(
          APIProblem(
            405, "method-not-allowed",
            "\(path) answers \(allowed.joined(separator: ", ")), not \(method.rawValue)"),
          headers: [("allow", allowed.joined(separator: ", "))]))
    case .found(let handler, let parameters, let template):
      var limit = Self.bodyLimit
      switch Self.bodies["\(method.rawValue) \(template)"] {
      case .streamed:
        return stream(head, method: method, handler: handler, parameters: parameters, reply: reply)
      case .gathered(let larger):
        limit = larger
      case nil:
        break
      }
      if let length = head.headers.first(name: "content-length").flatMap({ Int($0) }),
        length > limit
      {
        return .answer(
          Self.answer(
            APIProblem(413, "too-large", "a request body is at most \(limit) bytes"),
            closing: true))
      }
      return .gather(
        Call(
          handler: handler, request: Self.request(head, method: method), parameters: parameters),
        limit: limit)
    }
  }

  /// The request as the generated code takes it.
  private static func request(_ head: HTTPRequestHead, method: HTTPTypes.HTTPRequest.Method)
    -> HTTPTypes.HTTPRequest
  {
    var fields = HTTPFields()
    for (name, value) in head.headers {
      guard let name = HTTPField.Name(name) else { continue }
      fields.append(HTTPField(name: name, value: value))
    }
    return HTTPTypes.HTTPRequest(
      method: method, scheme: nil, authority: head.headers.first(name: "host"),
      path: head.uri, headerFields: fields)
  }

  /// Runs a streaming operation at once, its body fed to it as it comes (exactly its
  /// `Content-Length`, which it must have).
  private func stream(
    _ head: HTTPRequestHead, method: HTTPTypes.HTTPRequest.Method,
    handler: @escaping APIRoutes.Handler, parameters: [String: Substring], reply: HTTPReply
  ) -> HTTPRequestStateMachine<Call>.Decision {
    let lengths = head.headers["content-length"]
    guard lengths.count == 1, let length = UInt64(lengths[0]), length <= 1 << 62,
      !head.headers["transfer-encoding"].contains(where: { !$0.isEmpty })
    else {
      return .answer(
        Self.answer(
          APIProblem(411, "length-required", "the body comes with one Content-Length"),
          closing: true))
    }
    let body = StreamedBody()
    let call = Call(
      handler: handler, request: Self.request(head, method: method), parameters: parameters,
      streamed: body)
    let task = Task {
      let (response, responseBody) = await Self.perform(
        call, body: body.body(length: Int64(length)))
      await APIStreamWriter.write(response, responseBody, reply: reply)
    }
    call.task.withLock { $0 = task }
    return .stream(call, size: length)
  }

  func deliver(
    _ call: Call, body: ByteBuffer, _ request: FerryLocalSend.HTTPRequest, reply: HTTPReply
  ) -> Call? {
    let bytes = Array(body.readableBytesView)
    let task = Task {
      let (response, responseBody) = await Self.perform(call, body: bytes)
      await APIStreamWriter.write(response, responseBody, reply: reply)
    }
    call.task.withLock { $0 = task }
    return nil
  }

  /// Runs `call`'s operation on `body`: its response, or its error as the API's `Error`.
  private static func perform(_ call: Call, body: [UInt8]) async -> (HTTPResponse, HTTPBody?) {
    await perform(call, body: body.isEmpty ? nil : HTTPBody(body))
  }

  /// Runs `call`'s operation on `body`: its response, or its error as the API's `Error`.
  private static func perform(_ call: Call, body: HTTPBody?) async -> (HTTPResponse, HTTPBody?) {
    do {
      return try await call.handler(
        call.request, body, ServerRequestMetadata(pathParameters: call.parameters))
    } catch {
      let problem = Self.problem(error)
      var response = HTTPResponse(status: .init(code: problem.status))
      response.headerFields[.contentType] = "application/json"
      return (response, HTTPBody(problem.json))
    }
  }

  /// The API's words for `error`, thrown by a generated operation: its handler's own
  /// ``APIProblem``, or — for a request it could not read (a body that is not the JSON the
  /// operation takes, a parameter of the wrong kind) — a 400.
  static func problem(_ error: any Error) -> APIProblem {
    guard let error = error as? ServerError else {
      return (error as? APIProblem) ?? APIProblem(500, "internal", "the daemon failed: \(error)")
    }
    if let problem = error.underlyingError as? APIProblem { return problem }
    if error.operationInput == nil {
      // Never reached the handler: the request does not match the operation.
      let status = (400..<500).contains(error.httpStatus.code) ? error.httpStatus.code : 400
      return APIProblem(
        status, "bad-request",
        "the request does not match \(error.operationID) in /v1/openapi.yaml: "
          + Self.reason(error.underlyingError))
    }
    return APIProblem(500, "internal", "the daemon failed to answer \(error.operationID)")
  }

  /// A short reason for a request the generated code could not read.
  private static func reason(_ error: any Error) -> String {
    switch error {
    case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
      DecodingError.valueNotFound(_, let context), DecodingError.keyNotFound(_, let context):
      let path = context.codingPath.map(\.stringValue).joined(separator: ".")
      return path.isEmpty ? "its body is not the JSON expected" : "\(path) is missing or wrong"
    default:
      return "its body, parameters or content type are not what it takes"
    }
  }

  /// A whole answer of `problem`.
  static func answer(
    _ problem: APIProblem, headers: [(String, String)] = [], closing: Bool = false
  ) -> HTTPAnswer {
    HTTPAnswer(
      HTTPResponseStatus(statusCode: problem.status), body: problem.json,
      type: "application/json", closing: closing, headers: headers)
  }

  func feed(
    _ work: Call, piece: ByteBuffer, cost: Int, _ request: FerryLocalSend.HTTPRequest,
    caughtUp: @escaping @Sendable () -> Void
  ) -> Bool {
    work.streamed?.feed(piece, cost: cost, caughtUp: caughtUp) ?? true
  }

  func bodyEnded(_ work: Call, _ request: FerryLocalSend.HTTPRequest, reply: HTTPReply) -> Call? {
    work.streamed?.end()
    return nil
  }

  func overlong(_ work: Call) { work.streamed?.cut() }

  func abandoned(_ work: Call, _ request: FerryLocalSend.HTTPRequest) {
    work.streamed?.cut()
    work.cancel()
  }

  func connection(_ slot: Int, busy: Bool) {
    if busy { slots.busy(slot) } else { slots.idle(slot) }
  }

  func requestStarted() {}

  func requestAnswered() {}
}
