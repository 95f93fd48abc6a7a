import Dispatch
import Ferry
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A device's `register` to a ``LocalSendServer``.
public struct LocalSendRegistration: Sendable {
  /// What it says about itself.
  public let device: LocalSendDevice
  /// Where it connected from.
  public let address: String
  /// Whether its client certificate proved the fingerprint it claims (false: it presented
  /// none, which a server that lets unverified devices in takes, or spoke plain HTTP).
  public let proven: Bool
}

/// A LocalSend receiver: the HTTPS server of LocalSend protocol 2.2 (`register`, `info`,
/// `prepare-upload`, `upload`, `cancel`), whose uploads go through Ferry's transfer core —
/// the same consent, confinement, conflict policy, space checks, staging, verification and
/// placing as a Ferry offer. What it asks about comes out of ``incoming``; what happens to the
/// files, out of ``events``; who registers, out of ``registrations``.
///
/// Thread-safe. Its connections run on NIO's event loops; each offer's disk work on a queue of
/// its own.
public final class LocalSendServer: Sendable {
  /// What the server needs.
  public struct Configuration: Sendable {
    /// The certificate presented to senders (its fingerprint is announced).
    public var identity: Identity
    /// This device as others see it (its fingerprint is the identity's).
    public var alias: String
    /// The model announced (`deviceModel`).
    public var deviceModel: String?
    /// The device type announced (`deviceType`: mobile, desktop, web, headless, server).
    public var deviceType: String
    /// The port to listen on (0: any free one).
    public var port: UInt16
    /// Whether senders must prove their key with a client certificate.
    public var senderCheck: LocalSendSenderCheck
    /// A PIN senders must give (3 wrong ones from an address: 429).
    public var pin: String?
    /// Plain HTTP instead of HTTPS (LocalSend's "encryption off"): nobody is verified.
    public var plainHTTP: Bool
    /// How long a sender may make no progress before its session ends.
    public var stall: Duration
    /// Whether files and texts are taken; false: `prepare-upload` is refused (403) and the
    /// server answers discovery (`register`, `info`) only, as a sending device's does.
    public var receives: Bool
    /// A web page's link (`ferry receive --web`): the page is served under it, and nothing
    /// else without its token. Set with `plainHTTP` (browsers refuse self-signed
    /// certificates).
    public var web: LocalSendWebAccess?

    /// A configuration; the defaults are LocalSend 2.2's strict side (HTTPS, client
    /// certificates required, no PIN) on its usual port.
    public init(
      identity: Identity, alias: String, deviceModel: String? = "Ferry",
      deviceType: String = "headless", port: UInt16 = LocalSendProtocol.defaultPort,
      senderCheck: LocalSendSenderCheck = .certificate, pin: String? = nil,
      plainHTTP: Bool = false, stall: Duration = .seconds(60), receives: Bool = true,
      web: LocalSendWebAccess? = nil
    ) {
      self.identity = identity
      self.alias = alias
      self.deviceModel = deviceModel
      self.deviceType = deviceType
      self.port = port
      self.senderCheck = senderCheck
      self.pin = pin
      self.plainHTTP = plainHTTP
      self.stall = stall
      self.receives = receives
      self.web = web
    }
  }

  /// What one server admits at once.
  public enum Limits {
    /// Connections open at once.
    public static let connections = 64
    /// Connections open at once from one address.
    public static let connectionsPerAddress = 16
    /// Uploads of one session at once.
    public static let parallelUploads = 8
    /// How long a request's head (and a JSON body) may take to arrive.
    public static let requestDeadline: Duration = .seconds(10)
    /// How long a connection may stay silent, between requests or in an upload's body.
    public static let idleTimeout: Duration = .seconds(30)
    /// The bytes of JSON bodies (prepare-upload, register, cancel) held at once while they
    /// arrive, from every connection together: past it, a body is refused (503) rather than
    /// read, so that 64 connections each sending 4 MiB cannot take 256 MiB.
    public static let jsonBytesInFlight = 16 << 20
  }

  let configuration: Configuration
  let tls: LocalSendTLS?
  /// What a web receiver answers before any route (nil: not one).
  let webGate: WebGate?
  /// The upload sessions: the one record of the session under way (``UploadSessionMachine``).
  let sessions: Mutex<UploadSessionMachine>
  /// Whether a session is under way (0 or 1), for ``waitUntilNoSession()`` to wait on.
  let sessionsUnderWay = CountGauge()
  private let connections = ConnectionSlots(
    total: Limits.connections, perAddress: Limits.connectionsPerAddress)
  private let channel = Mutex<(any Channel)?>(nil)
  /// Requests received whose answers are not flushed yet.
  private let unanswered = CountGauge()
  /// Bytes of JSON bodies held while they arrive, all connections together.
  let jsonBytes = ByteBudget(Limits.jsonBytesInFlight)

  /// What the application is asked about: files (a ``ResourceOffer``) and text messages.
  public let incoming: AsyncStream<LocalSendIncoming>
  let incomingContinuation: AsyncStream<LocalSendIncoming>.Continuation
  /// What happens to accepted files, as a Ferry session reports it.
  public let events: AsyncStream<ResourceEvent>
  let eventsContinuation: AsyncStream<ResourceEvent>.Continuation
  /// Devices that registered with this one (a `POST /register`: one that heard our
  /// announcement, or is looking for devices), with their address, and whether a client
  /// certificate proved the key they claim.
  public let registrations: AsyncStream<LocalSendRegistration>
  let registrationsContinuation: AsyncStream<LocalSendRegistration>.Continuation
  /// Senders turned away in the TLS handshake (no client certificate, plain HTTP, a failed
  /// handshake), each address once per 10 minutes: their apps say only "connection failed",
  /// so the person at this end is told.
  public let refusals: AsyncStream<LocalSendRefusal>
  private let refusalsContinuation: AsyncStream<LocalSendRefusal>.Continuation
  private let refusalReports = RefusalReports()

  /// Prepares a server; ``start()`` listens.
  ///
  /// - Throws: NIOSSL's error when the identity cannot make a TLS context.
  public init(_ configuration: Configuration) throws {
    self.configuration = configuration
    webGate = configuration.web.map { WebGate($0) }
    tls =
      configuration.plainHTTP
      ? nil
      : try LocalSendTLS(identity: configuration.identity, senderCheck: configuration.senderCheck)
    sessions = Mutex(UploadSessionMachine(pin: configuration.pin))
    (incoming, incomingContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    (events, eventsContinuation) = AsyncStream.makeStream()
    (registrations, registrationsContinuation) = AsyncStream.makeStream(
      bufferingPolicy: .bufferingNewest(256))
    (refusals, refusalsContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
  }

  /// This device as announced and answered: alias, model, type, fingerprint, port, protocol.
  public var device: LocalSendDevice {
    LocalSendDevice(
      alias: configuration.alias, deviceModel: configuration.deviceModel,
      deviceType: configuration.deviceType,
      fingerprint: configuration.plainHTTP
        ? Self.plainFingerprint : configuration.identity.fingerprint.hexString,
      port: Int(port), protocol: configuration.plainHTTP ? "http" : "https", download: false)
  }

  /// A plain-HTTP device's fingerprint is a random string (nothing proves one).
  private static let plainFingerprint = Secrets.token()

  /// The port it listens on (0 before ``start()``).
  public var port: UInt16 {
    channel.withLock { $0?.localAddress?.port.map { UInt16($0) } ?? 0 }
  }

  /// Listens on every address (IPv6 and IPv4), on the configured port.
  ///
  /// - Returns: The port.
  /// - Throws: NIO's error when the port cannot be bound (taken by a LocalSend app, say).
  @discardableResult
  public func start() async throws -> UInt16 {
    let bound = try await HTTPServing.listen(port: configuration.port) { [weak self] channel in
      guard let self else { return channel.close() }
      return self.initialize(channel)
    }
    channel.withLock { $0 = bound }
    return port
  }

  /// Stops listening; sessions under way end as their connections do.
  public func stop() {
    channel.withLock { $0 }?.close(promise: nil)
    incomingContinuation.finish()
    registrationsContinuation.finish()
    refusalsContinuation.finish()
  }

  /// A sender's TLS handshake failed: reported, unless its address was lately. Any thread.
  func refused(_ refusal: LocalSendRefusal) {
    if refusalReports.shouldReport(refusal) { refusalsContinuation.yield(refusal) }
  }

  /// Waits until every request received has its answer flushed (or its connection closed),
  /// at most `timeout`: the last file's 200 leaves before a process that stops on the
  /// transfer's end exits. Any task.
  public func drain(timeout: Duration) async {
    await unanswered.wait(until: .now + timeout)
  }

  /// A request was received (its answer is owed). On its connection's event loop.
  func requestStarted() { unanswered.increment() }

  /// The connection in `slot` has a request under way: it is not taken for a new one.
  func connectionBusy(_ slot: Int) { connections.busy(slot) }

  /// The connection in `slot` is between requests: a new connection past a cap may take its
  /// place.
  func connectionIdle(_ slot: Int) { connections.idle(slot) }

  /// A request's answer was flushed, or its connection closed first. Any thread.
  func requestAnswered() { unanswered.decrement() }

  /// Waits until no session is under way (asked about, or uploading): a sender that makes no
  /// progress loses its session at the stall limit, so this ends — or when the task is
  /// cancelled. Any task.
  public func waitUntilNoSession() async {
    await sessionsUnderWay.wait()
  }

  /// Cancels the session under way, if any (the application's cancel): its sender's uploads
  /// are cut off.
  public func cancelSession() {
    guard let id = sessions.withLock({ $0.currentSession }), let session = session(id) else {
      return
    }
    session.offer?.cancelFromApplication()
  }

  // MARK: Connections

  private func initialize(_ channel: any Channel) -> EventLoopFuture<Void> {
    let address = PeerAddress.of(channel.remoteAddress)
    guard let slot = connections.admit(channel, from: address) else { return channel.close() }
    channel.closeFuture.whenComplete { [connections] _ in connections.release(slot) }
    let presented = PresentedCertificate()
    do {
      let sync = channel.pipeline.syncOperations
      if let tls {
        try sync.addHandler(tls.serverHandler(recording: presented))
        try sync.addHandler(
          HandshakeWatcher(address: address, presented: presented) { [weak self] in
            self?.refused($0)
          })
      }
      // A connection silent for the idle time is closed (its handler says when waiting is
      // not silence).
      try HTTPServing.serve(
        channel, endpoints: LocalSendEndpoints(server: self, presented: presented),
        address: address, slot: slot, budget: jsonBytes,
        limits: HTTPRequestStateMachine.Limits(requestDeadline: Limits.requestDeadline),
        idleTimeout: Limits.idleTimeout)
      return channel.eventLoop.makeSucceededVoidFuture()
    } catch {
      return channel.close()
    }
  }

  // MARK: Sessions

  /// The session under way's front end for its files, if it is `id`.
  func session(_ id: String) -> UploadSession? {
    guard case .files(let session)? = sessions.withLock({ $0.subject(of: id) }) else {
      return nil
    }
    return session
  }

  /// Session `id`, being asked about, is about `subject`; false when it ended meanwhile.
  func attach(_ subject: UploadSessionMachine.Subject, to id: String) -> Bool {
    sessions.withLock { $0.attach(subject, to: id) }
  }

  /// Session `id` is over: the next prepare-upload may start one. Returns whether it was the
  /// one under way (ended now), and what it was about.
  @discardableResult
  func end(_ id: String) -> (ended: Bool, subject: UploadSessionMachine.Subject?) {
    sessions.withLock {
      let ended = $0.ended(id)
      if ended.ended { sessionsUnderWay.decrement() }
      return ended
    }
  }

  /// Session `id`'s sender left before it was answered: the session ends, and its question
  /// with it (files: the core hears `reason`; a text: withdrawn), so that the next sender is
  /// not busy for the rest of it.
  func withdraw(_ id: String, reason: String) {
    switch end(id).subject {
    case .files(let session)?: session.offer?.senderReset(reason: reason)
    case .text(let text)?: text.withdraw()
    case nil: break
    }
  }

  /// Session `id`'s sender cancelled it: over at once for the sender (its next prepare-upload
  /// is not busy); the core hears `reason` and cleans up behind it. A text being asked about
  /// has no upload session: it stays the one question until it is answered (or times out), so
  /// that cancels cannot pile up questions.
  func cancel(_ id: String, reason: String) {
    guard let session = session(id) else { return }
    end(id)
    session.offer?.senderReset(reason: reason)
  }
}
