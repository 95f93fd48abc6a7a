import HTTPTypes
import OpenAPIRuntime
import Testing

@testable import FerryDaemon

/// The control API's routes: templates matched segment by segment, as bytes.
@Suite("The API's routes")
struct APIRoutesTests {
  static func routes() throws -> APIRoutes {
    let routes = APIRoutes()
    let handler: APIRoutes.Handler = { _, _, _ in (HTTPResponse(status: .ok), nil) }
    try routes.register(handler, method: .get, path: "/v1/sends")
    try routes.register(handler, method: .post, path: "/v1/sends")
    try routes.register(handler, method: .get, path: "/v1/sends/{id}")
    try routes.register(handler, method: .post, path: "/v1/offers/{id}/accept")
    return routes
  }

  @Test("a template's parameter takes one non-empty segment")
  func parameters() throws {
    let routes = try Self.routes()
    guard case .found(_, let parameters, _) = routes.match(method: .get, path: "/v1/sends/abc")
    else {
      Issue.record("no match")
      return
    }
    #expect(parameters == ["id": "abc"])
    guard case .notFound = routes.match(method: .get, path: "/v1/sends/") else {
      Issue.record("an empty id matched")
      return
    }
    guard case .notFound = routes.match(method: .get, path: "/v1/sends/a/b") else {
      Issue.record("two segments matched one parameter")
      return
    }
  }

  @Test("doubled slashes, a trailing slash and look-alike spellings match nothing")
  func strict() throws {
    let routes = try Self.routes()
    for path in ["/v1//sends", "/v1/sends/", "//v1/sends", "/V1/sends", "/v1/sends\u{0301}", ""] {
      guard case .notFound = routes.match(method: .get, path: Substring(path)) else {
        Issue.record("\(path) matched")
        continue
      }
    }
  }

  @Test("the path exists for other methods: they are listed")
  func wrongMethod() throws {
    let routes = try Self.routes()
    guard case .wrongMethod(let allowed) = routes.match(method: .delete, path: "/v1/sends") else {
      Issue.record("not a wrong method")
      return
    }
    #expect(allowed.sorted() == ["GET", "POST"])
  }

  @Test("a request the generated code cannot read is a 400, a handler's problem is its own")
  func problems() {
    let problem = APIProblem.notFound("no such send")
    #expect(APIEndpoints.problem(problem) == problem)
    let unknown = APIEndpoints.problem(CancellationError())
    #expect(unknown.status == 500)
  }
}
