import Ferry
import FerryAPI
import FerryAgent
import Foundation

/// `ferry send --later`: hands the files to `ferry daemon` (`POST /v1/sends`, `when: seen`),
/// which delivers them when the receiver is seen; prints the send's id.
struct LaterSend {
  let command: SendCommand

  /// Queues the send.
  ///
  /// - Throws: ``CLIFailure``: no daemon (exit 2), a receiver it cannot name or paths it
  ///   cannot send (its words, exit 2 or 3).
  func run() async throws {
    // The daemon has no current folder: paths are made absolute here, as they are now.
    let paths = command.paths.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
    for (given, path) in zip(command.paths, paths) where access(path, F_OK) != 0 {
      throw CLIFailure(
        status: .usage,
        message: "cannot read \(DisplayText.escaping(given)): \(systemWords(errno))",
        code: .cannotRead)
    }
    let client = try DaemonClient(socket: nil)
    let request = Components.Schemas.SendRequest(
      paths: paths, to: command.to[0],
      _protocol: command.localSend.isOn ? .localsend : nil, when: .seen,
      expiresIn: command.waitDays.map { Int(($0 * 86_400).rounded()) })
    let send: Components.Schemas.Send
    do {
      switch try await client.api.createSend(body: .json(request)) {
      case .created(let created): send = try created.body.json
      case .default(let code, let problem):
        throw DaemonClient.failure(try problem.body.json, status: code)
      }
    } catch {
      throw client.failure(error)
    }
    if command.output.json {
      StandardStream.output.write(DaemonClient.json(send) + "\n")
    } else {
      StandardStream.output.write(send.id + "\n")
      EventWriter(json: false, quiet: command.output.quiet).note(
        "Queued \(Quantity.count(send.fileCount, "file")) "
          + "(\(Quantity.bytes(UInt64(send.total)))) for \(printable(send.to)): the daemon "
          + "delivers them when it is seen, until \(send.expires.formatted(.iso8601)). "
          + "'ferry outbox' shows it; 'ferry outbox cancel \(send.id)' cancels it.")
    }
  }
}
