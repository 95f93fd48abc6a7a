import Ferry
import FerryLocalSend
import Foundation

/// `ferry receive --localsend`: a LocalSend server on port 53317 beside the Ferry listener,
/// and LocalSend discovery (multicast announcements and answers) — its offers decided by the
/// same ``ReceiveDecisions``, its files reported by the same ``ReceiveReporter``.
struct LocalSendReceiving: Sendable {
  let server: LocalSendServer
  let discovery: LocalSendDiscovery?

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
        message: "cannot answer LocalSend on port \(options.port): \(error) (is a LocalSend "
          + "app running here? --localsend-port chooses another)",
        code: .cannotListen)
    }
    let discovery: LocalSendDiscovery?
    do {
      let found = try LocalSendDiscovery(
        me: { server.device }, identity: identity,
        interfaces: options.interfaces.isEmpty ? nil : options.interfaces)
      try await found.start()
      discovery = found
    } catch {
      // Reached by address still: said, and gone on.
      output.note(
        "LocalSend devices will not see this machine (\(error)); they can still send to "
          + "port \(server.port) by address.")
      discovery = nil
    }
    if options.plainHTTP {
      output.note(
        "LocalSend over plain HTTP (--localsend-http): anyone on this network can read and "
          + "change what is sent, and no sender is verified.")
    }
    return LocalSendReceiving(server: server, discovery: discovery)
  }

  /// Decides what LocalSend senders offer and reports what their files do, until the server
  /// stops.
  func serve(decisions: ReceiveDecisions, reporter: ReceiveReporter, knownPeers: KnownPeers) {
    let server = self.server
    Task {
      for await event in server.events {
        reporter.report(event, refusalBeforeDecision: false)
      }
    }
    Task {
      await withDiscardingTaskGroup { group in
        for await incoming in server.incoming {
          group.addTask {
            switch incoming {
            case .files(let offer, let sender):
              await decisions.decide(localSend: offer, from: sender, knownPeers: knownPeers)
            case .text(let text):
              await decisions.decide(localSend: text, knownPeers: knownPeers)
            }
          }
        }
      }
    }
    if let discovery {
      // Answering what is heard is discovery's own work; nothing here needs the sightings.
      Task { for await _ in discovery.sightings {} }
    }
  }

  /// Stops announcing and taking new connections (Ctrl-C): a session under way is cancelled
  /// with the other transfers, as ``IncomingTransfers`` holds it.
  func stopListening() {
    discovery?.stop()
    server.stop()
  }
}
