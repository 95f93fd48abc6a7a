import ArgumentParser
import FerryAPI
import FerryAgent
import FerryDaemon
import Foundation

/// `ferry ui`: opens the daemon's web page in this machine's browser, signed in by a link that
/// works once.
struct UICommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "ui",
    abstract: "Open the daemon's web page in this machine's browser.",
    discussion: """
      Asks 'ferry daemon' for a link to its page — served on 127.0.0.1 and ::1 only — that \
      signs one browser in, once, within 60 s, and opens it with xdg-open. When no daemon \
      runs for this user, starts one first ('ferry daemon' in the background, its log in \
      daemon.log in ferry's home, receiving into ~/Downloads unless the config names a dir); \
      --no-start: exit 2 instead. Without a desktop (no DISPLAY or WAYLAND_DISPLAY), with \
      --print, or when xdg-open fails, the link is printed instead: open it in a browser on \
      this machine (over ssh: forward the port, ssh -L PORT:127.0.0.1:PORT).

      Examples:
        ferry ui
        ferry ui --print
        ferry ui --no-start --json | jq -r .url
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Flag(help: "Print the link instead of opening a browser.")
  var print = false

  @Flag(help: "Do not start a daemon when none runs (exit 2).")
  var noStart = false

  @Flag(name: [.short, .long], help: "Print the API's answer (url, expires) as one JSON object.")
  var json = false

  func run() async throws {
    let client = try daemon.client()
    let output = EventWriter(json: false)
    let login: Components.Schemas.UILogin
    do {
      login = try await Self.login(client)
    } catch let failure as CLIFailure where failure.code == .noDaemon && !noStart {
      try await DaemonStarter.start(socket: daemon.socket, client: client, output: output)
      login = try await Self.login(client)
    }
    if json { return StandardStream.output.write(DaemonClient.json(login) + "\n") }
    if !print, await DesktopOpener.open(login.url) {
      output.say("Opened the daemon's page in your browser.")
      return
    }
    output.say("Open this link in a browser on this machine (it works once, within 60 s):")
    output.say("  \(login.url)")
  }

  /// A sign-in link from the daemon `client` reaches.
  ///
  /// - Throws: ``CLIFailure``: `no-daemon` when none answers, `daemon` for its refusal.
  static func login(_ client: DaemonClient) async throws -> Components.Schemas.UILogin {
    do {
      switch try await client.api.createUILogin() {
      case .created(let created): return try created.body.json
      case .default(let code, let problem):
        throw DaemonClient.failure(try problem.body.json, status: code)
      }
    } catch {
      throw client.failure(error)
    }
  }
}
