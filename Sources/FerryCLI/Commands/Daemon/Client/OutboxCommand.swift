import ArgumentParser
import Ferry
import FerryAPI
import FerryAgent
import Foundation

/// `ferry outbox`: the sends the daemon keeps; `ferry outbox cancel ID`.
struct OutboxCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "outbox",
    abstract: "List the daemon's sends (queued with 'ferry send --later'), or cancel one.",
    subcommands: [OutboxListCommand.self, OutboxCancelCommand.self],
    defaultSubcommand: OutboxListCommand.self)
}

/// `ferry outbox [list]`.
struct OutboxListCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "list",
    abstract: "List the sends the daemon keeps, newest first.",
    discussion: """
      Each with its id, receiver, state (queued, delivering, delivered, failed, cancelled, \
      expired), files and bytes; ended sends stay listed for the config's outbox_days.

      Examples:
        ferry outbox
        ferry outbox --json | jq -r 'select(.state == "queued") | .id'
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Flag(name: [.short, .long], help: "Print each send as one JSON object (the API's Send).")
  var json = false

  func run() async throws {
    let client = try daemon.client()
    let sends: [Components.Schemas.Send]
    do {
      switch try await client.api.listSends() {
      case .ok(let ok): sends = try ok.body.json.sends
      case .default(let code, let problem):
        throw DaemonClient.failure(try problem.body.json, status: code)
      }
    } catch {
      throw client.failure(error)
    }
    let output = EventWriter(json: false)
    for send in sends {
      if json {
        StandardStream.output.write(DaemonClient.json(send) + "\n")
        continue
      }
      var line =
        "\(send.id)  \(send.state.rawValue)  to \(DisplayText.quoted(send.to)) "
        + "(\(send._protocol.rawValue)): \(Quantity.count(send.fileCount, "file")), "
        + "\(Quantity.bytes(UInt64(send.bytes))) of \(Quantity.bytes(UInt64(send.total)))"
      if send.state == .queued {
        line += ", until \(send.expires.formatted(.iso8601))"
      }
      if let error = send.error { line += "\n    \(printable(error.message))" }
      output.say(line)
    }
    if sends.isEmpty && !json { output.note("The outbox is empty.") }
  }
}

/// `ferry outbox cancel ID`.
struct OutboxCancelCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "cancel",
    abstract: "Cancel a send (one under way is stopped on both ends).",
    discussion: """
      Examples:
        ferry outbox cancel 3f9a0c2d4e5b6a71
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Argument(help: "The send's id (16 hex digits, from 'ferry outbox').")
  var id: String

  func run() async throws {
    let id = id.lowercased()
    let client = try daemon.client()
    let send: Components.Schemas.Send
    do {
      switch try await client.api.cancelSend(path: .init(id: id)) {
      case .ok(let ok): send = try ok.body.json
      case .default(let code, let problem):
        throw DaemonClient.failure(try problem.body.json, status: code)
      }
    } catch {
      throw client.failure(error)
    }
    EventWriter(json: false).note("\(send.id): \(send.state.rawValue).")
  }
}
