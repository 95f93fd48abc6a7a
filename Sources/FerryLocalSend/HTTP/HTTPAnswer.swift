import NIOHTTP1

/// One whole answer an endpoint gives: its status, body, type and headers of its own, and
/// whether the connection closes after it.
package struct HTTPAnswer: Sendable {
  /// Its status.
  package let status: HTTPResponseStatus
  /// Its body.
  package let body: [UInt8]
  /// Its `Content-Type`.
  package let type: String
  /// Whether the connection closes once it is written (a refusal whose body is not read).
  package let closing: Bool
  /// Headers of its own (after the server's ``HTTPEndpoints/extraHeaders``).
  package let headers: [(String, String)]

  /// An answer of `body`, of type `type`, with `headers` of its own.
  package init(
    _ status: HTTPResponseStatus, body: [UInt8], type: String, closing: Bool = false,
    headers: [(String, String)] = []
  ) {
    (self.status, self.body, self.type, self.closing, self.headers) = (
      status, body, type, closing, headers
    )
  }

  /// A plain-text answer.
  package static func text(_ status: HTTPResponseStatus, _ text: String, closing: Bool = false)
    -> HTTPAnswer
  {
    HTTPAnswer(
      status, body: Array(text.utf8), type: "text/plain; charset=utf-8", closing: closing)
  }

  /// A JSON answer.
  package static func json(_ status: HTTPResponseStatus, _ body: [UInt8]) -> HTTPAnswer {
    HTTPAnswer(status, body: body, type: "application/json")
  }
}
