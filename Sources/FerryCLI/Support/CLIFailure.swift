/// An error that ends the command with a message on stderr and a given exit status.
struct CLIFailure: Error, CustomStringConvertible {
  /// The exit status.
  let status: ExitStatus
  /// The message, printed after `ferry: error: `.
  let message: String
  /// The stable code used in JSON `error` events.
  let code: ErrorCode

  var description: String { message }
}
