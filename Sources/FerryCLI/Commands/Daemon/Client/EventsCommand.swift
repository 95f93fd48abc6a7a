import ArgumentParser
import Ferry
import Foundation

/// `ferry events`: the daemon's event stream.
struct EventsCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "events",
    abstract: "Follow the daemon's events (what --json writes, each with its id).",
    discussion: """
      Until Ctrl-C. --since ID replays the events kept after that id first (the daemon keeps \
      the last 1000): a script that reconnects passes the last id it read.

      Examples:
        ferry events
        ferry events --json --since 0 | jq -c 'select(.event == "asking")'
        ferry events --json --no-follow --since 0
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Flag(name: [.short, .long], help: "Print the events as they come: one JSON object a line.")
  var json = false

  @Option(help: ArgumentHelp("Replay the kept events after this id first.", valueName: "id"))
  var since: Int64?

  @Flag(name: .customLong("follow"), inversion: .prefixedNo, help: "Go on with new events.")
  var follow = true

  func run() async throws {
    let client = try daemon.client()
    let body: HTTPBodyLines
    do {
      switch try await client.api.streamEvents(query: .init(since: since, follow: follow)) {
      case .ok(let ok): body = HTTPBodyLines(try ok.body.application_x_hyphen_ndjson)
      case .default(let code, let problem):
        throw DaemonClient.failure(try problem.body.json, status: code)
      }
    } catch {
      throw client.failure(error)
    }
    do {
      for try await line in body {
        if json {
          StandardStream.output.write(line + "\n")
        } else {
          StandardStream.output.write(DisplayText.terminalSafe(Self.human(line)) + "\n")
        }
      }
    } catch {
      throw client.failure(error)
    }
  }

  /// An event as a line for people: its time, name, and fields as `name=value`.
  static func human(_ line: String) -> String {
    guard
      let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else { return line }
    let time = (object["timestamp"] as? String).map { String($0.dropFirst(11).prefix(8)) } ?? ""
    let name = object["event"] as? String ?? "?"
    let fields = object.keys.sorted().filter { !["event", "timestamp", "id"].contains($0) }
      .compactMap { key -> String? in
        guard let value = object[key], !(value is NSNull) else { return nil }
        // Text from peers is quoted: a name cannot pass for another field.
        if let text = value as? String { return "\(key)=\(DisplayText.quoted(text))" }
        return "\(key)=\(value)"
      }
    return ([time, name] + fields).joined(separator: " ")
  }
}
