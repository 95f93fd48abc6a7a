import ArgumentParser
import Ferry
import FerryAPI
import Foundation

/// `ferry status`: what the daemon running for this user says of itself.
struct StatusCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "status",
    abstract: "Show the running daemon: this machine, its ports, what it receives, its outbox.",
    discussion: """
      Asks 'ferry daemon' (exit 2 when none runs for this user).

      Examples:
        ferry status
        ferry status --json | jq .outbox
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Flag(name: [.short, .long], help: "Print the API's answer as one JSON object.")
  var json = false

  func run() async throws {
    let client = try daemon.client()
    let status: Components.Schemas.Status
    do {
      switch try await client.api.getStatus() {
      case .ok(let ok): status = try ok.body.json
      case .default(let code, let problem):
        throw DaemonClient.failure(try problem.body.json, status: code)
      }
    } catch {
      throw client.failure(error)
    }
    if json { return StandardStream.output.write(DaemonClient.json(status) + "\n") }
    let output = EventWriter(json: false)
    let key =
      (try? Fingerprint(parsing: status.fingerprint))?.shortDescription ?? status.fingerprint
    output.say(
      "ferry daemon \(status.version) (pid \(status.pid)), running since \(status.started.formatted(.iso8601))"
    )
    output.say(
      "  name '\(status.name)' [\(key)], Ferry port \(status.ports.ferry)"
        + (status.advertised ? ", advertised" : ", not advertised (avahi-daemon is not running)"))
    if let port = status.ports.localsend { output.say("  LocalSend apps: port \(port)") }
    if let port = status.ports.ui { output.say("  web page: http://127.0.0.1:\(port)/ (ferry ui)") }
    output.say(
      "  receiving into \(status.receiving.dir) (accept: \(status.receiving.accept.rawValue))")
    output.say("  outbox: \(status.outbox.queued) queued, \(status.outbox.delivering) delivering")
    output.say("  addresses: \(status.addresses.joined(separator: ", "))")
  }
}
