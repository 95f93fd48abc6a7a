import Ferry
import FerryAPI
import FerryAgent
import FerryLocalSend
import Foundation
import OpenAPIRuntime
import Synchronization

/// `ferry daemon`'s parts around the receiver its command runs: the control API on its Unix
/// socket, the event log the API streams, the questions waiting for a person (the receiver's
/// decider), the outbox and its courier, the history, and the desktop notifications. The
/// command feeds it the receiver's events (``observe(_:)``) and the records its reporters
/// write (``events``). Any thread.
package final class Daemon: Sendable {
  /// How the daemon runs.
  package struct Configuration: Sendable {
    /// Who this machine is.
    package let identity: Identity
    /// The name peers see.
    package let name: String
    /// The DNS-SD service type.
    package let serviceType: ServiceType
    /// What this machine knows of keys.
    package let knownPeers: KnownPeers
    /// Where the outbox and the history are kept (Ferry's home).
    package let home: URL
    /// The API's socket.
    package let socket: String
    /// How long a queued send waits by default, and an ended one is listed.
    package let outboxDays: Double
    /// How many transfers the history keeps.
    package let historyLimit: Int
    /// Whether to raise desktop notifications (when there is a session bus).
    package let notify: Bool
    /// Whether it hears LocalSend devices (its receiver answers LocalSend apps).
    package let localSend: Bool
    /// Unicast DNS-SD domains the outbox looks for receivers in besides the local network.
    package let domains: [BrowseDomain]
    /// The web page's ports on 127.0.0.1 and ::1, tried in turn (0: one the system picks);
    /// none for no page.
    package let uiPorts: [Int]
    /// Whom the receiver lets in without asking, at start (``Daemon/accept`` switches it).
    package let policy: ReceivePolicy
    /// The folder it receives into (the page opens it).
    package let receiveFolder: String?

    /// A configuration.
    package init(
      identity: Identity, name: String, serviceType: ServiceType, knownPeers: KnownPeers,
      home: URL, socket: String, outboxDays: Double, historyLimit: Int, notify: Bool,
      localSend: Bool, domains: [BrowseDomain] = [], uiPorts: [Int] = [],
      policy: ReceivePolicy = .ask, receiveFolder: String? = nil
    ) {
      (self.identity, self.name, self.serviceType, self.knownPeers) = (
        identity, name, serviceType, knownPeers
      )
      (self.home, self.socket, self.outboxDays, self.historyLimit, self.notify) = (
        home, socket, outboxDays, historyLimit, notify
      )
      self.localSend = localSend
      self.domains = domains
      self.uiPorts = uiPorts
      self.policy = policy
      self.receiveFolder = receiveFolder
    }
  }

  package let configuration: Configuration
  /// The events, as `--json` writes them.
  package let events: EventLog
  /// The questions waiting for a person: the receiver's decider (under its policy).
  package let offers: OpenOffers
  /// The sends kept.
  package let outbox: Outbox
  /// Delivers the outbox.
  package let courier: Courier
  /// What was received and sent.
  package let history: History
  /// When the daemon started.
  package let started = Date()
  private let notifier = NotifierSlot()
  private let trimmer = IdleTrim()
  private let server = Mutex<APIServer?>(nil)
  private let page = Mutex<UIServer?>(nil)
  /// Who may use the web page.
  private let logins = UILogins()
  /// Whom the receiver lets in without asking: the configured policy, then what the API sets;
  /// the receiver's decider (what it does not decide, ``offers`` asks).
  package let accept: AcceptSwitch
  /// The transfers coming in now (the API lists and cancels them).
  package let arriving = ArrivingTransfers()
  /// The protocol each sender let in came by, and whether it proved its key (for the
  /// history), by key.
  private let protocols = Mutex<[Fingerprint: (name: String, verified: Bool)]>([:])

  /// The daemon's parts, its events kept in `events`; `sendEvents` reports what deliveries
  /// do, `outboxEvents` what happens to sends, `questionEvents` the questions waiting for a
  /// person (each also goes to the history and the notifications here), `aroundEvents` the
  /// peers that come into sight and leave it.
  package init(
    _ configuration: Configuration, events: EventLog,
    sendEvents: @escaping @Sendable (SendEvent) -> Void,
    outboxEvents: @escaping @Sendable (Outbox.Event) -> Void,
    questionEvents: @escaping @Sendable (OpenOffers.Change) -> Void,
    aroundEvents: @escaping @Sendable (Courier.AroundChange) -> Void = { _ in }
  ) {
    self.configuration = configuration
    self.events = events
    let notifier = self.notifier
    let trimmer = self.trimmer
    offers = OpenOffers { change in
      questionEvents(change)
      notifier.current?.changed(change)
    }
    accept = AcceptSwitch(configuration.policy, asker: offers)
    history = History(
      path: configuration.home.appendingPathComponent("history.json").path,
      limit: configuration.historyLimit)
    let history = self.history
    outbox = Outbox(
      folder: configuration.home.appendingPathComponent("outbox", isDirectory: true),
      keepEnded: configuration.outboxDays * 86_400
    ) { event in
      outboxEvents(event)
      guard case .ended(let entry) = event else { return }
      trimmer.workEnded()
      history.add(Daemon.historyEntry(entry))
      notifier.current?.sendEnded(
        summary: Daemon.endedSummary(entry), body: Daemon.endedBody(entry))
    }
    courier = Courier(
      outbox: outbox,
      configuration: Courier.Configuration(
        identity: configuration.identity, name: configuration.name,
        serviceType: configuration.serviceType, knownPeers: configuration.knownPeers,
        domains: configuration.domains),
      report: sendEvents, around: aroundEvents)
  }

  /// Reads the outbox, connects the notifications (when asked for and there is a session
  /// bus) and starts the API with `status` and `peers` for what only the command knows.
  ///
  /// - Throws: ``APIServer/Failure`` when the socket cannot be served; the outbox's error
  ///   when its folder cannot be read.
  package func start(
    status: @escaping @Sendable () -> Components.Schemas.Status,
    peers: @escaping @Sendable () -> Components.Schemas.Peers
  ) async throws {
    // Notifications first: a send the outbox ends as it loads (cancelled before a restart,
    // out of attempts) raises one, as any send's end does.
    if configuration.notify {
      notifier.replace(with: DesktopNotifier(offers: offers))
    }
    try outbox.load()
    let routes = APIRoutes()
    let sends = DaemonSends(
      outbox: outbox, courier: courier, knownPeers: configuration.knownPeers,
      around: { [courier] in Daemon.around(courier) },
      defaultExpiry: configuration.outboxDays * 86_400,
      hearsLocalSend: configuration.localSend)
    let handler = APIHandler(
      parts: APIHandler.Parts(
        status: status, peers: peers, sends: sends, offers: offers, history: history,
        events: events, uiLogin: { [self] in uiLogin() }, knownPeers: configuration.knownPeers,
        accept: accept, receiveFolder: configuration.receiveFolder, transfers: arriving,
        uploads: BrowserUploads(
          folder: configuration.home.appendingPathComponent("uploads", isDirectory: true),
          sends: sends)))
    var encoding = OpenAPIRuntime.Configuration()
    encoding.jsonEncodingOptions = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    try handler.registerHandlers(on: routes, configuration: encoding)
    // The ports in turn (the default one may be taken: another user's daemon, say); the
    // last one's failure is the daemon's.
    var failure: UIServer.Failure?
    for port in configuration.uiPorts {
      do {
        let served = try await UIServer.start(
          port: port, routes: routes, logins: logins, events: events,
          pairing: UIPage.pairing(
            name: configuration.name, fingerprint: configuration.identity.fingerprint.hexString))
        page.withLock { $0 = served }
        failure = nil
        break
      } catch {
        failure = error
      }
    }
    if let failure { throw failure }
    do {
      let started = try await APIServer.start(at: configuration.socket, routes: routes)
      server.withLock { $0 = started }
    } catch {
      await page.withLock { $0 }?.stop()
      throw error
    }
  }

  /// The web page's port, while it is served.
  package var uiPort: Int? { page.withLock { $0?.port } }

  /// A link that signs a browser of this machine in to the web page once, within
  /// ``UILogins/lifetime``; nil when there is no page.
  package func uiLogin() -> (url: String, expires: Date)? {
    guard let port = uiPort else { return nil }
    let secret = logins.makeSecret()
    return (
      "http://127.0.0.1:\(port)\(UIGuard.loginPath)?token=\(secret)",
      Date().addingTimeInterval(Double(UILogins.lifetime.components.seconds))
    )
  }

  /// Whether desktop notifications are shown (a session bus answered).
  package var notifies: Bool { notifier.current != nil }

  /// Delivers the outbox until the task is cancelled.
  package func run() async {
    await courier.run()
  }

  /// Stops the API (its socket removed), the notifications and the event streams; questions
  /// still open are withdrawn.
  package func stop() async {
    offers.withdrawAll()
    await courier.stopDeliveries()
    let server = self.server.withLock { server in
      defer { server = nil }
      return server
    }
    await server?.stop()
    await page.withLock { page in
      defer { page = nil }
      return page
    }?.stop()
    notifier.replace(with: nil)?.close()
    events.finishAll()
  }

  /// What the receiver reported: the history keeps each transfer's end; LocalSend devices
  /// heard go to the courier.
  package func observe(_ event: ReceiverEvent) {
    switch event {
    case .localSendSeen(let sighting):
      courier.seen(sighting)
    case .accepted(let sender, _, _):
      let name: String
      switch sender {
      case .ferry: name = "ferry"
      case .localSend(let sender): name = sender.isBrowser ? "web" : "localsend"
      }
      protocols.withLock { protocols in
        if protocols.count > 1024 { protocols.removeAll() }
        protocols[sender.peer.fingerprint] = (name, sender.verified)
      }
    case .declined(let sender, _, _):
      history.add(received(sender.peer, verified: sender.verified, files: 0, bytes: 0, .declined))
    case .offerDeclined(let peer, _, let files, let bytes):
      history.add(received(peer, verified: true, files: files, bytes: bytes, .declined))
    case .transferStarted(let transfer, _):
      arriving.started(transfer)
    case .transferEnded(let transfer, let error):
      arriving.ended(transfer)
      trimmer.workEnded()
      history.add(
        received(
          transfer.peer, verified: nil, files: transfer.files.count, bytes: transfer.totalBytes,
          error == nil ? .done : .failed))
    case .interrupted(let transfer):
      arriving.ended(transfer)
      trimmer.workEnded()
      history.add(
        received(
          transfer.peer, verified: nil, files: transfer.files.count, bytes: transfer.totalBytes,
          .cancelled))
    default:
      break
    }
  }

  /// A received transfer's entry; `verified` nil: as the sender was let in.
  private func received(
    _ peer: PeerID, verified: Bool?, files: Int, bytes: UInt64, _ outcome: History.Entry.Outcome
  ) -> History.Entry {
    let known = protocols.withLock { $0[peer.fingerprint] }
    let verified = verified ?? known?.verified ?? true
    let protocolName = known?.name ?? "ferry"
    return History.Entry(
      direction: .received, peer: peer.displayName,
      fingerprint: verified && protocolName != "web" ? peer.fingerprint.hexString : nil,
      protocol: protocolName, files: files, bytes: bytes, outcome: outcome)
  }
}

/// The desktop notifier, once there is one.
private final class NotifierSlot: Sendable {
  private let notifier = Mutex<DesktopNotifier?>(nil)

  var current: DesktopNotifier? { notifier.withLock { $0 } }

  /// Puts `new` in its place; the one it replaced.
  @discardableResult
  func replace(with new: DesktopNotifier?) -> DesktopNotifier? {
    notifier.withLock { notifier in
      defer { notifier = new }
      return notifier
    }
  }
}
