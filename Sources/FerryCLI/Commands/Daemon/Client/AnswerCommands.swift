import ArgumentParser
import FerryAPI
import FerryAgent
import FerryDaemon
import Foundation

/// `ferry accept ID`: says yes to a question the daemon holds.
struct AcceptCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "accept",
    abstract: "Accept a sender waiting in the daemon (its id from 'ferry offers').",
    discussion: """
      Examples:
        ferry accept 3f9a0c2d4e5b6a71
        ferry offers --json | jq -r 'select(.sender.status == "trusted") | .id' | xargs -n1 ferry accept
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Argument(help: "The question's id (16 hex digits).")
  var id: String

  func run() async throws {
    try await AnswerCommands.answer(id, accept: true, daemon: daemon)
  }
}

/// `ferry decline ID`: says no to a question the daemon holds.
struct DeclineCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "decline",
    abstract: "Decline a sender waiting in the daemon (its id from 'ferry offers').",
    discussion: """
      Examples:
        ferry decline 3f9a0c2d4e5b6a71
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Argument(help: "The question's id (16 hex digits).")
  var id: String

  func run() async throws {
    try await AnswerCommands.answer(id, accept: false, daemon: daemon)
  }
}

enum AnswerCommands {
  /// Answers question `id`.
  ///
  /// - Throws: ``CLIFailure``: no daemon (exit 2), no such question open (exit 3).
  static func answer(_ id: String, accept: Bool, daemon: DaemonSocketOption) async throws {
    let id = id.lowercased()
    guard DaemonID.isValid(id) else {
      throw CLIFailure(
        status: .usage,
        message: "'\(printable(id))' is not a question's id (16 hex digits: ferry offers)",
        code: .usage)
    }
    let client = try daemon.client()
    do {
      let path = Operations.acceptOffer.Input.Path(id: id)
      if accept {
        switch try await client.api.acceptOffer(path: path) {
        case .ok: break
        case .default(let code, let problem):
          throw DaemonClient.failure(try problem.body.json, status: code)
        }
      } else {
        switch try await client.api.declineOffer(path: .init(id: id)) {
        case .ok: break
        case .default(let code, let problem):
          throw DaemonClient.failure(try problem.body.json, status: code)
        }
      }
    } catch {
      throw client.failure(error)
    }
    EventWriter(json: false).note(accept ? "Accepted \(id)." : "Declined \(id).")
  }
}
