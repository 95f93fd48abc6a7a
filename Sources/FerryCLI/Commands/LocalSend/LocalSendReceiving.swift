import Ferry
import FerryAgent
import FerryLocalSend
import Foundation

/// `ferry receive --localsend`: a LocalSend server on port 53317 beside the Ferry listener,
/// and LocalSend discovery (multicast announcements and answers), started here and handed to
/// the same ``Receiver`` as the Ferry listener (its offers under the same policy and budget,
/// its events through the same ``ReceiveReporter``).
struct LocalSendReceiving: Sendable {
  let server: LocalSendServer
  let discovery: LocalSendDiscovery?
  /// Whether senders without a certificate may ask (`--localsend-unverified`).
  let takesUnverified: Bool

  /// Starts the server and discovery.
  ///
  /// - Throws: ``CLIFailure`` (`cannot-listen`) when the port is taken (a LocalSend app runs
  ///   here, say) or the identity cannot serve TLS.
  static func start(
    _ options: LocalSendReceiveOptions, identity: Identity, displayName: String,
    output: EventWriter
  ) async throws(CLIFailure) -> LocalSendReceiving {
    let server: LocalSendServer
    do {
      server = try LocalSendServer(
        LocalSendServer.Configuration(
          identity: identity, alias: displayName, deviceModel: "Ferry", deviceType: "headless",
          port: options.port, senderCheck: options.legacy ? .allowUnverified : .certificate,
          pin: options.pin, plainHTTP: options.plainHTTP))
      try await server.start()
    } catch {
      throw CLIFailure(
        status: .usage,
        message:
          "cannot answer LocalSend on port \(options.port): \(ErrorWords.describe(error)) (is a LocalSend "
          + "app running here? --localsend-port chooses another)",
        code: .cannotListen)
    }
    let discovery: LocalSendDiscovery?
    do {
      let found = try LocalSendDiscovery(
        me: { server.device }, identity: identity,
        interfaces: options.interfaces.isEmpty ? nil : options.interfaces,
        answersPlainHTTP: options.plainHTTP)
      try await found.start()
      discovery = found
    } catch {
      // Reached by address still: said, and gone on.
      output.note(
        "LocalSend devices will not see this machine (\(ErrorWords.describe(error))); they can still send to "
          + "port \(server.port) by address.")
      discovery = nil
    }
    if options.plainHTTP {
      output.note(
        "LocalSend over plain HTTP (--localsend-http): anyone on this network can read and "
          + "change what is sent, and no sender is verified.")
    }
    return LocalSendReceiving(
      server: server, discovery: discovery, takesUnverified: options.legacy)
  }

  /// Stops announcing and taking connections (a start that failed after it).
  func stopListening() {
    discovery?.stop()
    server.stop()
  }

  /// The receiver's front end it is.
  var frontEnd: Receiver.FrontEnd {
    .localSend(server, discovery: discovery, takesUnverified: takesUnverified)
  }
}
