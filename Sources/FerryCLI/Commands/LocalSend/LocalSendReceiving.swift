import Ferry
import FerryLocalSend
import Foundation

/// `ferry receive --localsend`: a LocalSend server on port 53317 beside the Ferry listener,
/// and LocalSend discovery (multicast announcements and answers) — its offers decided by the
/// same ``ReceiveDecisions``, its files reported by the same ``ReceiveReporter``.
struct LocalSendReceiving: Sendable {
  let server: LocalSendServer
  let discovery: LocalSendDiscovery?
  /// Whether senders without a certificate may ask (`--localsend-unverified`).
  let takesUnverified: Bool
  let output: EventWriter
  /// When its web link expires (`ferry receive --web`; nil for LocalSend apps).
  var expires: ContinuousClock.Instant? = nil

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
      server: server, discovery: discovery, takesUnverified: options.legacy, output: output)
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
    // Aliases announced from each address: a sender turned away in its TLS handshake is
    // named by the one its address announced (its own words: a label, never proof).
    let aliases = LocalSendAliases()
    if let discovery {
      Task {
        for await sighting in discovery.sightings {
          aliases.heard(sighting.device.alias, at: sighting.address)
        }
      }
    }
    Task { [output, takesUnverified] in
      for await refusal in server.refusals {
        let name = aliases.alias(at: refusal.address)
        let who =
          "a LocalSend sender at \(refusal.address)"
          + (name.map { " (\(DisplayText.quoted($0)))" } ?? "")
        let message = Self.explain(refusal, who: who, takesUnverified: takesUnverified)
        output.emit(
          SenderRefused(
            protocol: "localsend", address: refusal.address, name: name,
            code: refusal.reason.rawValue, message: message))
        output.note(message)
      }
    }
  }

  /// What a refusal means to the person at this end, and what lets such senders in.
  static func explain(_ refusal: LocalSendRefusal, who: String, takesUnverified: Bool) -> String {
    switch refusal.reason {
    case .noCertificate:
      return "Turned away \(who): it presented no certificate, so nothing proves which device "
        + "it is (LocalSend 1.17 and older, and other apps without certificates, send none). "
        + "To let such senders ask — shown UNVERIFIED, never accepted by a list — run ferry "
        + "receive --localsend --localsend-unverified."
    case .plainHTTP:
      return "Turned away \(who): it speaks plain HTTP (encryption is off in its LocalSend "
        + "settings). Turn encryption on there, or run ferry receive --localsend "
        + "--localsend-http (then nobody is verified, and anyone on the network can read the "
        + "files)."
    case .handshakeFailed:
      return "Turned away \(who): its TLS handshake failed (\(printable(refusal.detail)))."
    }
  }

  /// Stops announcing and taking new connections (Ctrl-C): a session under way is cancelled
  /// with the other transfers, as ``IncomingTransfers`` holds it.
  func stopListening() {
    discovery?.stop()
    server.stop()
  }
}
