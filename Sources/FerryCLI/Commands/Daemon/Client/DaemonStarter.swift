import Ferry
import FerryAPI
import FerryDaemon
import Foundation

/// Starts this user's `ferry daemon` in the background for `ferry ui`, when none answers: a
/// person who clicks Ferry in the menu has no terminal to start it from. This very binary as
/// `ferry daemon`, in a session of its own (setsid: a terminal closing does not end it), its
/// output appended to `daemon.log` in ferry's home, in the Downloads folder when the config
/// names no `dir` (where its files land) — not the systemd user unit, whose folder is the
/// home's. Then waits, up to 20 s, for it to answer.
enum DaemonStarter {
  /// How long the daemon may take to answer once started.
  static let patience: Duration = .seconds(20)

  /// Starts the daemon for the API's socket `socket` (nil: the default one) and waits until
  /// `client` reaches it.
  ///
  /// - Throws: ``CLIFailure`` (exit 2, `no-daemon`) saying what was tried and where its log is.
  static func start(socket: String?, client: DaemonClient, output: EventWriter) async throws {
    let log = FerryHome.defaultDirectory.appendingPathComponent("daemon.log").path
    try spawn(socket: socket, log: log)
    output.note("No ferry daemon ran for this user: started one (its log: \(log)).")
    if await answers(client) { return }
    throw CLIFailure(
      status: .usage,
      message: "the ferry daemon did not start within \(patience.components.seconds) s: see \(log) "
        + "(or run 'ferry daemon' in a terminal to see why)",
      code: .noDaemon)
  }

  /// Starts `ferry daemon` detached.
  private static func spawn(socket: String?, log: String) throws {
    try? FerryHome.prepare(FerryHome.defaultDirectory)
    let me =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      ?? CommandLine.arguments[0]
    // LocalSend too (phones and other computers), unless the config says no or its port is
    // taken: a person who never opens a terminal has no other way to turn it on.
    var arguments = [me, "daemon", "--localsend"]
    if let socket { arguments += ["--socket", socket] }
    let process = Process()
    if let setsid = DesktopOpener.executable("setsid") {
      process.executableURL = URL(fileURLWithPath: setsid)
      process.arguments = ["--fork"] + arguments
    } else {
      process.executableURL = URL(fileURLWithPath: me)
      process.arguments = Array(arguments.dropFirst())
    }
    process.currentDirectoryURL = folder()
    let opened = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    let sink =
      opened >= 0 ? FileHandle(fileDescriptor: opened, closeOnDealloc: true) : .nullDevice
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = sink
    process.standardError = sink
    do {
      try process.run()
    } catch {
      throw CLIFailure(
        status: .usage, message: "could not start 'ferry daemon': \(error)", code: .noDaemon)
    }
  }

  /// Where a daemon started here receives when the config names no `dir`: the Downloads
  /// folder when there is one, else the home folder.
  private static func folder() -> URL {
    let home =
      ProcessInfo.processInfo.environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
      .map { URL(fileURLWithPath: $0, isDirectory: true) }
      ?? FileManager.default.homeDirectoryForCurrentUser
    if (try? ReceiveConfig.load(explicit: nil).dir) != nil { return home }
    let downloads = home.appendingPathComponent("Downloads", isDirectory: true)
    var folder: ObjCBool = false
    return FileManager.default.fileExists(atPath: downloads.path, isDirectory: &folder)
      && folder.boolValue ? downloads : home
  }

  /// Whether the daemon answers within ``patience``.
  private static func answers(_ client: DaemonClient) async -> Bool {
    let deadline = ContinuousClock.now + patience
    while ContinuousClock.now < deadline {
      if case .ok = try? await client.api.getStatus() { return true }
      try? await Task.sleep(for: .milliseconds(200))
    }
    return false
  }
}
