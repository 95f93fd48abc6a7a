import ArgumentParser
import FerryAPI
import FerryAgent
import Foundation

/// `ferry ui`: opens the daemon's web page in this machine's browser, signed in by a link that
/// works once.
struct UICommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "ui",
    abstract: "Open the daemon's web page in this machine's browser.",
    discussion: """
      Asks 'ferry daemon' (exit 2 when none runs for this user) for a link to its page — \
      served on 127.0.0.1 and ::1 only — that signs one browser in, once, within 60 s, and \
      opens it with xdg-open. Without a desktop (no DISPLAY or WAYLAND_DISPLAY), with \
      --print, or when xdg-open fails, the link is printed instead: open it in a browser on \
      this machine (over ssh: forward the port, ssh -L PORT:127.0.0.1:PORT).

      Examples:
        ferry ui
        ferry ui --print
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Flag(help: "Print the link instead of opening a browser.")
  var print = false

  @Flag(name: [.short, .long], help: "Print the API's answer (url, expires) as one JSON object.")
  var json = false

  func run() async throws {
    let client = try daemon.client()
    let login: Components.Schemas.UILogin
    do {
      switch try await client.api.createUILogin() {
      case .created(let created): login = try created.body.json
      case .default(let code, let problem):
        throw DaemonClient.failure(try problem.body.json, status: code)
      }
    } catch {
      throw client.failure(error)
    }
    if json { return StandardStream.output.write(DaemonClient.json(login) + "\n") }
    let output = EventWriter(json: false)
    if !print, await Self.open(login.url) {
      output.say("Opened the daemon's page in your browser.")
      return
    }
    output.say("Open this link in a browser on this machine (it works once, within 60 s):")
    output.say("  \(login.url)")
  }

  /// Opens `url` with xdg-open when there is a desktop: false when there is none, xdg-open is
  /// missing, or it fails within 5 s (one still running then is a browser it started in the
  /// foreground: it is left running).
  static func open(_ url: String) async -> Bool {
    let environment = ProcessInfo.processInfo.environment
    guard !(environment["DISPLAY"] ?? "").isEmpty || !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
    else { return false }
    let folders = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    guard
      let opener = folders.map({ "\($0)/xdg-open" }).first(where: {
        FileManager.default.isExecutableFile(atPath: $0)
      })
    else { return false }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: opener)
    process.arguments = [url]
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return false }
    for _ in 0..<50 where process.isRunning {
      try? await Task.sleep(for: .milliseconds(100))
    }
    return process.isRunning || process.terminationStatus == 0
  }
}
