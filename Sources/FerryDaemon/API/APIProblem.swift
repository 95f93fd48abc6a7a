import FerryAPI
import Foundation
import HTTPTypes

/// An error the control API answers with: its HTTP status, a stable code (docs/api/openapi.yaml
/// lists them) and words for people. Thrown by the API's handlers, written as `Error`'s JSON.
package struct APIProblem: Error, Sendable, Equatable {
  /// The HTTP status.
  package let status: Int
  /// The stable code.
  package let code: String
  /// What went wrong, for people.
  package let message: String

  /// A problem.
  package init(_ status: Int, _ code: String, _ message: String) {
    (self.status, self.code, self.message) = (status, code, message)
  }

  /// The request is malformed.
  package static func badRequest(_ message: String) -> APIProblem {
    APIProblem(400, "bad-request", message)
  }

  /// Nothing is at this path, or the thing it names does not exist.
  package static func notFound(_ message: String) -> APIProblem {
    APIProblem(404, "not-found", message)
  }

  /// As the generated types spell it.
  package var body: Components.Schemas._Error {
    Components.Schemas._Error(error: .init(code: code, message: message))
  }

  /// Its JSON (`{"error":{"code":…,"message":…}}`).
  package var json: [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? Array(encoder.encode(body)))
      ?? Array(#"{"error":{"code":"internal","message":""}}"#.utf8)
  }
}
