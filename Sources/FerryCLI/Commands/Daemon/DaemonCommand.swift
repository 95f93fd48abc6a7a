import ArgumentParser
import Ferry
import FerryAPI
import FerryAgent
import FerryDaemon
import Foundation
import ServiceLifecycle
import Synchronization

/// `ferry daemon`: receives as `ferry receive` does, always, under the config file's policy;
/// keeps the outbox; answers the control API on a Unix socket; raises desktop notifications.
struct DaemonCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "daemon",
    abstract: "Run in the background: receive, deliver the outbox, answer the local API.",
    discussion: """
      Receives from Ferry peers (and LocalSend apps with localsend = true) as 'ferry receive' \
      does, under the config file's [receive] table; a sender no standing rule accepts waits \
      for a person: 'ferry offers', then 'ferry accept ID' or 'ferry decline ID', the API \
      (GET /v1/offers), or a desktop notification's Accept and Decline. Sends queued with \
      'ferry send --later' (or POST /v1/sends) are delivered when their peer is seen, and \
      survive restarts. The control API (docs/DAEMON.md, docs/api/openapi.yaml) answers on a \
      Unix socket only this user and root may use: $XDG_RUNTIME_DIR/ferry/api.sock, else \
      run/api.sock in ferry's home. Runs until SIGTERM or Ctrl-C; one per ferry home.

      The config's [daemon] table: notify (desktop notifications, default true), outbox_days \
      (how long a queued send waits, default 7), history (transfers kept, default 500), \
      socket (the API's socket), ui (serve the web page, default true), ui_port (its port; \
      default: one the system picks at each start, which 'ferry ui' finds).

      Examples:
        ferry daemon
        ferry daemon --config /etc/ferry/config.toml
        ferry daemon --ui-port off
        systemctl --user start ferry
      """)

  @OptionGroup var logging: LogOptions

  @Option(
    help: ArgumentHelp(
      "A config file (default: $FERRY_CONFIG, else config.toml in ferry's home, when it "
        + "exists).", valueName: "file"),
    completion: .file(extensions: ["toml"]))
  var config: String?

  @Option(
    help: ArgumentHelp(
      "The API's socket (default: the config's, else $XDG_RUNTIME_DIR/ferry/api.sock).",
      valueName: "path"),
    completion: .file())
  var socket: String?

  @Flag(
    name: .customLong("localsend"),
    help: ArgumentHelp(
      "Also answer LocalSend apps (phones, Windows, macOS) when the config has no localsend "
        + "key: on their port if it is free, else without them (said once). 'ferry ui' starts "
        + "a daemon so."))
  var localSendIfFree = false

  @Option(
    name: .customLong("ui-port"),
    help: ArgumentHelp(
      "The web page's port on 127.0.0.1 and ::1, which 'ferry ui' opens: a number (0: one the "
        + "system picks), or off for no page (default: the config's ui_port, else one the "
        + "system picks at each start).", valueName: "port|off"))
  var uiPort: String?

  /// The web page's ports to try in turn: none for no page.
  func uiPorts(_ settings: DaemonSettings) throws -> [Int] {
    switch uiPort {
    case "off": return []
    case let given?:
      guard let port = Int(given), (0...65535).contains(port) else {
        throw CLIFailure(
          status: .usage,
          message: "--ui-port takes a port (0 to 65535) or off, not '\(printable(given))'",
          code: .usage)
      }
      return [port]
    case nil:
      guard settings.ui else { return [] }
      return [settings.uiPort ?? 0]
    }
  }

  func run() async throws {
    let config = try ReceiveConfig.load(explicit: self.config)
    // One daemon per home, before anything listens or reads the outbox.
    do {
      try DaemonLock.take(in: FerryHome.defaultDirectory)
    } catch {
      throw CLIFailure(status: .usage, message: "\(error)", code: .cannotListen)
    }
    // --localsend: LocalSend too, unless the config says no — and only if its port is free.
    let optionalLocalSend = localSendIfFree && config.localsend == nil
    let settings = try ReceiveSettings(
      ReceiveCommand.parse(optionalLocalSend ? ["--localsend"] : []), config: config,
      canAsk: true)
    let folder = try ReceiveDestination(
      settings.dir, create: settings.mkdir, origin: settings.dirOrigin)
    let knownPeers = KnownPeers()
    let policy = try ReceivePolicy.from(
      yes: settings.yes, acceptFrom: settings.acceptFrom, acceptTrusted: settings.acceptTrusted,
      canAsk: true, knownPeers: knownPeers)
    let identity = try loadIdentity()
    let socket = self.socket ?? config.daemon.socket ?? APIServer.defaultPath()
    let uiPorts = try uiPorts(config.daemon)
    let log = EventLog()
    var output = EventWriter(json: false)
    output.sink = { record in
      log.append(
        record,
        kept: !record.hasPrefix(#"{"event":"progress""#) && !record.hasPrefix(#"{"event":"around""#)
      )
    }
    let sendReporter = SendReporter(output: output, bar: ProgressBar(enabled: false))
    let front = try await DaemonFrontEnds.start(
      settings: settings, identity: identity, knownPeers: knownPeers, output: output,
      localSendOptional: optionalLocalSend)
    let daemon = Daemon(
      Daemon.Configuration(
        identity: identity, name: settings.name, serviceType: settings.service,
        knownPeers: knownPeers, home: FerryHome.defaultDirectory, socket: socket,
        outboxDays: config.daemon.outboxDays, historyLimit: config.daemon.history,
        notify: config.daemon.notify, localSend: front.localSend != nil, domains: config.domains,
        uiPorts: uiPorts, policy: policy, receiveFolder: folder.url.path),
      events: log, sendEvents: sendReporter.report,
      outboxEvents: { [output] event in DaemonReporter.report(event, to: output) },
      questionEvents: { [output] change in DaemonReporter.report(change, to: output) },
      aroundEvents: { [output] change in DaemonReporter.report(change, to: output) })
    let receiver = Receiver(
      Receiver.Configuration(
        options: ReceiveOptions(
          destination: folder.url, conflictPolicy: settings.onConflict,
          staleAfter: .seconds(settings.keepPartialDays * 86_400)),
        resumeGrace: .seconds(settings.resumeGrace)),
      decider: daemon.accept, knownPeers: knownPeers,
      frontEnds: front.frontEnds)
    let reporter = ReceiveReporter(
      output: output, bar: ProgressBar(enabled: false), incoming: IncomingTransfers(),
      sink: nil,
      advertised: ReceiveReporter.Advertised(
        into: "Receiving into \(folder.url.path)", destination: folder.url,
        fingerprint: identity.fingerprint, serviceType: settings.service,
        port: front.advertiser.port, policy: policy.banner), afterBanner: [])
    let status = DaemonStatus(
      daemon: daemon, settings: settings, destination: folder.url.path, front: front)
    do {
      try await daemon.start(status: { status.current }, peers: { daemon.peers() })
    } catch let error as UIServer.Failure {
      front.stop()
      throw CLIFailure(status: .usage, message: "\(error)", code: .cannotListen)
    } catch let error as APIServer.Failure {
      front.stop()
      throw CLIFailure(
        status: .usage,
        message: "\(error)"
          + (error == .running(socket)
            ? " (ferry status shows it; stop it with systemctl --user stop ferry)" : ""),
        code: .cannotListen)
    }
    output.note(
      "ferry daemon: receiving into \(folder.url.path); API at \(socket)"
        + (daemon.uiPort.map { "; page at http://127.0.0.1:\($0)/ (ferry ui)" } ?? "")
        + (daemon.notifies ? "; desktop notifications on" : "") + ". \(policy.banner)")
    let services = ServiceGroup.receiving(receiver, label: "ferry.daemon")
    let courier = Task { await daemon.run() }
    let reported = Latch()
    // Stopped by its service manager (SIGTERM) or Ctrl-C: its normal end, exit 0.
    Interrupts.stoppingIsSuccess()
    Interrupts.onInterrupt {
      courier.cancel()
      await services.triggerGracefulShutdown()
      await receiver.stop()
      await reported.wait()
    }
    let running = Task { try await services.run() }
    for await event in receiver.events {
      status.observe(event)
      daemon.observe(event)
      reporter.report(event)
    }
    courier.cancel()
    await courier.value
    await daemon.stop()
    reported.open()
    if case .failure(let error) = await running.result {
      throw CLIFailure(status: .transferFailed, message: "\(error)", code: .transferFailed)
    }
  }
}
