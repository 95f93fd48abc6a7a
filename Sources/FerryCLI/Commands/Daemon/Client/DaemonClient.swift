import ArgumentParser
import FerryAPI
import FerryDaemon
import Foundation
import OpenAPIRuntime

/// How the commands that talk to `ferry daemon` reach it: the API's client (generated from
/// docs/api/openapi.yaml) over its Unix socket — `--socket`, else the config's `[daemon]`
/// socket, else the default — and its failures in a person's words.
struct DaemonClient: Sendable {
  /// The socket.
  let path: String
  /// The API's client.
  let api: Client

  /// A client of the daemon at `socket` (nil: the config's, else the default), giving it
  /// `timeout` to answer.
  ///
  /// - Throws: ``CLIFailure`` for a config file that cannot be read.
  init(socket: String?, timeout: Duration = .seconds(10)) throws(CLIFailure) {
    if let socket {
      path = socket
    } else {
      path = try ReceiveConfig.load(explicit: nil).daemon.socket ?? APIServer.defaultPath()
    }
    var configuration = Configuration()
    configuration.jsonEncodingOptions = [.sortedKeys, .withoutEscapingSlashes]
    api = Client(
      serverURL: URL(string: "http://localhost")!, configuration: configuration,
      transport: UnixSocketTransport(path: path, timeout: timeout))
  }

  /// `error`, thrown by a call to the daemon, in words that say what to do (exit 2 when no
  /// daemon runs).
  func failure(_ error: any Error) -> CLIFailure {
    if let failure = error as? CLIFailure { return failure }
    let cause = (error as? ClientError)?.underlyingError ?? error
    if case UnixSocketTransport.Failure.noDaemon = cause {
      return CLIFailure(
        status: .usage,
        message: "no ferry daemon runs for this user (nothing answers on \(path)): start one "
          + "with 'ferry daemon' (or 'systemctl --user start ferry')",
        code: .noDaemon)
    }
    return CLIFailure(
      status: .transferFailed, message: "the daemon did not answer: \(cause)", code: .daemon)
  }

  /// The failure for the API's `Error` answer.
  static func failure(_ problem: Components.Schemas._Error, status: Int) -> CLIFailure {
    CLIFailure(
      status: status == 404 ? .noPeer : .usage,
      message: "the daemon says: \(problem.error.message)", code: .daemon)
  }

  /// `value` as one line of JSON (what `--json` prints).
  static func json(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "{}"
  }
}

/// `--socket`, for the commands that talk to the daemon.
struct DaemonSocketOption: ParsableArguments {
  @Option(
    help: ArgumentHelp(
      "The daemon's socket (default: the config's, else $XDG_RUNTIME_DIR/ferry/api.sock).",
      valueName: "path"),
    completion: .file())
  var socket: String?

  /// The client for it.
  func client() throws(CLIFailure) -> DaemonClient { try DaemonClient(socket: socket) }
}
