import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// The control API's routes: what the code generated from docs/api/openapi.yaml registers
/// (OpenAPIRuntime's `ServerTransport`), one handler per method and path template
/// (`/v1/sends/{id}`), and the matching of a request's path to them. Paths are split and
/// compared as bytes. Any thread.
package final class APIRoutes: ServerTransport, Sendable {
  /// A generated operation's handler.
  package typealias Handler =
    @Sendable (HTTPTypes.HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (
      HTTPResponse, HTTPBody?
    )

  /// One segment of a path template.
  enum Segment: Sendable, Equatable {
    /// Itself.
    case literal(Substring)
    /// A parameter (`{name}`): any one non-empty segment.
    case parameter(String)
  }

  private struct Route: Sendable {
    let method: HTTPTypes.HTTPRequest.Method
    /// Its template as registered (`/v1/sends/{id}`).
    let path: String
    let segments: [Segment]
    let handler: Handler
  }

  /// What a request's method and path find.
  package enum Match: Sendable {
    /// This handler, with these path parameters, found by this template.
    case found(Handler, [String: Substring], template: String)
    /// The path exists, not for this method: these are.
    case wrongMethod(allowed: [String])
    /// Nothing is at the path.
    case notFound
  }

  private let routes = Mutex<[Route]>([])

  /// No routes yet.
  package init() {}

  /// Registers `handler` for `method` on `path`, a template with `{name}` segments
  /// (`ServerTransport`'s requirement; the generated code calls it once per operation).
  package func register(
    _ handler: @escaping Handler, method: HTTPTypes.HTTPRequest.Method, path: String
  ) throws {
    let route = Route(
      method: method, path: path, segments: Self.template(path), handler: handler)
    routes.withLock { $0.append(route) }
  }

  /// The segments of a template.
  static func template(_ path: String) -> [Segment] {
    Self.segments(Substring(path)).map { segment in
      if segment.hasPrefix("{") && segment.hasSuffix("}") {
        return .parameter(String(segment.dropFirst().dropLast()))
      }
      return .literal(segment)
    }
  }

  /// A path's segments, split on the byte `/` (empty ones between doubled slashes kept, so
  /// that `/v1//status` matches nothing).
  static func segments(_ path: Substring) -> [Substring] {
    var path = path
    if path.utf8.first == UInt8(ascii: "/") { path = path.dropFirst() }
    return path.split(separator: "/", omittingEmptySubsequences: false)
  }

  /// The route for `method` on `path` (the request target without its query).
  package func match(method: HTTPTypes.HTTPRequest.Method, path: Substring) -> Match {
    let segments = Self.segments(path)
    var allowed: [String] = []
    for route in routes.withLock({ $0 }) {
      guard let parameters = Self.parameters(segments, route.segments) else { continue }
      if route.method == method {
        return .found(route.handler, parameters, template: route.path)
      }
      allowed.append(route.method.rawValue)
    }
    return allowed.isEmpty ? .notFound : .wrongMethod(allowed: allowed)
  }

  /// The parameters of `segments` matched against `template`, nil when it does not match.
  private static func parameters(_ segments: [Substring], _ template: [Segment])
    -> [String: Substring]?
  {
    guard segments.count == template.count else { return nil }
    var parameters: [String: Substring] = [:]
    for (segment, expected) in zip(segments, template) {
      switch expected {
      case .literal(let literal):
        guard segment.utf8.elementsEqual(literal.utf8) else { return nil }
      case .parameter(let name):
        guard !segment.isEmpty else { return nil }
        parameters[name] = segment
      }
    }
    return parameters
  }
}
