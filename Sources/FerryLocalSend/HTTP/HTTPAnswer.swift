import NIOHTTP1

/// One whole answer an endpoint gives: its status, body and type, and whether the connection
/// closes after it.
struct HTTPAnswer: Sendable {
  /// Its status.
  let status: HTTPResponseStatus
  /// Its body.
  let body: [UInt8]
  /// Its `Content-Type`.
  let type: String
  /// Whether the connection closes once it is written (a refusal whose body is not read).
  let closing: Bool

  /// An answer of `body`, of type `type`.
  init(_ status: HTTPResponseStatus, body: [UInt8], type: String, closing: Bool = false) {
    (self.status, self.body, self.type, self.closing) = (status, body, type, closing)
  }

  /// A plain-text answer.
  static func text(_ status: HTTPResponseStatus, _ text: String, closing: Bool = false)
    -> HTTPAnswer
  {
    HTTPAnswer(
      status, body: Array(text.utf8), type: "text/plain; charset=utf-8", closing: closing)
  }

  /// A JSON answer.
  static func json(_ status: HTTPResponseStatus, _ body: [UInt8]) -> HTTPAnswer {
    HTTPAnswer(status, body: body, type: "application/json")
  }
}
