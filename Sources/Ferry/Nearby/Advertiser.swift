import Foundation
import NIOCore
import Synchronization

/// Publishes this peer on the local network through avahi-daemon and receives invitations, like
/// MultipeerConnectivity's `MCNearbyServiceAdvertiser`.
///
/// ```swift
/// let advertiser = try Advertiser(identity: identity, displayName: "Kitchen laptop")
/// let name = try await advertiser.start()   // listening, and on the network
/// for await invitation in advertiser.invitations {
///   try await invitation.accept(into: session)
/// }
/// ```
///
/// Created with an identity, the advertiser runs a TLS listener (on `port`, or any free port)
/// and yields each authenticated ``Invitation``. Created with ``init(peer:serviceType:port:discoveryInfo:)``
/// it only publishes, for applications that listen themselves.
///
/// The service is published as `<display name>._<type>._tcp.local` with the TXT records of
/// ``DiscoveryInfo``. If another service already has the name, Avahi's alternative name
/// (`alice #2`) is taken and reported as ``AdvertiserEvent/renamed(from:to:)``. If avahi-daemon
/// restarts, the service is published again when it is back.
public final class Advertiser: Sendable {
  /// The peer being advertised.
  public let peer: PeerID
  /// The service type it is published under.
  public let serviceType: ServiceType
  /// The TCP port published in the SRV record (for a listening advertiser: known once
  /// ``start()`` has bound it).
  public var port: UInt16 { core.state.withLock { $0.port } }
  /// Invitations received in the current run (or the last one, after ``stop()``), for an
  /// advertiser created with an identity; finishes after ``stop()`` (and at once for a
  /// publish-only advertiser). After ``start()`` following a stop it is a new sequence: read it
  /// again. Several readers may wait at once: each invitation goes to one of them, in order.
  public var invitations: AsyncStream<Invitation> {
    core.state.withLock { $0.run.invitations }
  }
  /// The TXT record published: `v`, `fp` and the application's pairs.
  public let discoveryInfo: DiscoveryInfo
  /// What happens to the publication after ``start()``: renames, daemon restarts, failures.
  /// Finishes after ``stop()``; a new sequence after ``start()`` following a stop. Several
  /// readers split the events between them.
  public var events: AsyncStream<AdvertiserEvent> {
    core.state.withLock { $0.run.events }
  }

  /// Makes the listener of each run (nil for a publish-only advertiser).
  private let makeListener: (@Sendable () -> InvitationListener)?
  private let core: Core

  /// One run, from a start (or creation) to a stop: its event stream and its listener.
  private struct Run {
    let generation: UInt64
    let events: AsyncStream<AdvertiserEvent>
    let continuation: AsyncStream<AdvertiserEvent>.Continuation
    let listener: InvitationListener?
    let invitations: AsyncStream<Invitation>

    init(generation: UInt64, listener: InvitationListener?) {
      self.generation = generation
      (events, continuation) = AsyncStream.makeStream(
        of: AdvertiserEvent.self, bufferingPolicy: .unbounded)
      self.listener = listener
      if let listener {
        invitations = listener.invitations
      } else {
        let (stream, finished) = AsyncStream<Invitation>.makeStream()
        finished.finish()
        invitations = stream
      }
    }
  }

  private struct State {
    var port: UInt16
    var run: Run
    var listening = false
    var connection: AvahiConnection?
    var publication: AvahiPublication?
    var waiter: CheckedContinuation<String, any Error>?
    var publishedName: String?
    var stopped = false
  }

  /// What the poll thread reaches: the state, whose run holds the events' continuation.
  private final class Core: Sendable {
    let state: Mutex<State>
    let serviceType: ServiceType

    init(state: State, serviceType: ServiceType) {
      self.state = Mutex(state)
      self.serviceType = serviceType
    }

    /// Runs on the poll thread; `generation` is the run the publication belongs to (a report
    /// from a stopped run is dropped).
    func publicationReported(_ event: AvahiPublication.Event, generation: UInt64) {
      let current = state.withLock { state -> AsyncStream<AdvertiserEvent>.Continuation? in
        state.run.generation == generation && !state.stopped ? state.run.continuation : nil
      }
      guard let continuation = current else { return }
      switch event {
      case .established(let name):
        let waiter = state.withLock { state in
          state.publishedName = name
          defer { state.waiter = nil }
          return state.waiter
        }
        waiter?.resume(returning: name)
        FerryLogging.logger.info("published as \(name) (\(serviceType))")
        continuation.yield(.published(name: name))
      case .renamed(let old, let new):
        FerryLogging.logger.info("the name \(old) is taken; publishing as \(new)")
        continuation.yield(.renamed(from: old, to: new))
      case .daemonLost(let reason):
        FerryLogging.logger.notice("avahi-daemon went away: \(reason)")
        state.withLock { $0.publishedName = nil }
        continuation.yield(.daemonDisconnected(reason: reason))
      case .failed(let reason):
        FerryLogging.logger.notice("avahi-daemon could not publish the service: \(reason)")
        let error = DiscoveryError.registrationFailed(reason: reason)
        let waiter = state.withLock { state in
          defer { state.waiter = nil }
          return state.waiter
        }
        waiter?.resume(throwing: error)
        continuation.yield(.failed(error))
      }
    }
  }

  init(
    peer: PeerID, serviceType: ServiceType, port: UInt16, discoveryInfo: [String: String],
    makeListener: (@Sendable () -> InvitationListener)?
  ) throws(DiscoveryError) {
    self.peer = peer
    self.serviceType = serviceType
    do {
      self.discoveryInfo = try DiscoveryInfo(fingerprint: peer.fingerprint, values: discoveryInfo)
    } catch {
      throw .invalidDiscoveryInfo(error)
    }
    self.makeListener = makeListener
    let run = Run(generation: 0, listener: makeListener?())
    self.core = Core(state: State(port: port, run: run), serviceType: serviceType)
  }

  deinit {
    stop()
  }

  /// The name the service is published under now (after any rename), or nil before it is
  /// established.
  public var publishedName: String? {
    core.state.withLock { $0.publishedName }
  }

  /// Whether it is advertising or listening: started (by ``start()`` or ``listen()``) and not
  /// stopped since.
  public var isAdvertising: Bool {
    core.state.withLock { state in
      !state.stopped && (state.listening || state.publication != nil)
    }
  }

  /// Starts the TLS listener without publishing anything, so that peers who know the address
  /// can invite this one even when avahi-daemon is not running. Calling it again (or calling
  /// ``start()`` afterwards) keeps the same listener. After ``stop()`` it begins a new run, on
  /// the port of the last one when that port is still free.
  ///
  /// - Returns: The bound TCP port (0 for a publish-only advertiser, which has no listener).
  /// - Throws: ``DiscoveryError/portInUse(port:)`` when another program holds the port,
  ///   ``DiscoveryError/cannotListen(port:reason:)`` when it cannot be bound otherwise;
  ///   ``DiscoveryError/stopped`` when ``stop()`` is called meanwhile.
  @discardableResult
  public func listen() async throws(DiscoveryError) -> UInt16 {
    try await listen(preferring: nil)
  }

  /// ``listen()``, but an advertiser made to listen on any free port (port 0) tries
  /// `preferred` first — the port an earlier process listened on, so that peers that remember
  /// its address reach this one — and takes any free port when `preferred` is taken.
  ///
  /// - Returns: The bound TCP port (0 for a publish-only advertiser).
  /// - Throws: As ``listen()``.
  @discardableResult
  public func listen(preferring preferred: UInt16?) async throws(DiscoveryError) -> UInt16 {
    let restartedFrom = restartIfStopped()
    let (listener, requested, listening, generation) = core.state.withLock {
      ($0.run.listener, $0.port, $0.listening, $0.run.generation)
    }
    guard let listener else { return 0 }
    if listening { return requested }
    // The last run's port, so that peers holding its address still reach this one; or the
    // port asked for.
    let again = restartedFrom ?? (requested == 0 ? preferred : nil)
    do {
      let bound: UInt16
      if let again, again != 0 {
        if let again = try? await listener.start(port: again) {
          bound = again
        } else {
          bound = try await listener.start(port: 0)
        }
      } else {
        bound = try await listener.start(port: requested)
      }
      let current = core.state.withLock { state in
        guard state.run.generation == generation, !state.stopped else { return false }
        state.port = bound
        state.listening = true
        return true
      }
      if !current { throw DiscoveryError.stopped }
      return bound
    } catch let error as DiscoveryError {
      throw error
    } catch {
      throw listenFailure(error, port: requested)
    }
  }

  /// Begins a new run after ``stop()``: a new listener, event stream and invitation stream.
  ///
  /// - Returns: The last run's bound port when a new run began, nil when none was stopped.
  private func restartIfStopped() -> UInt16? {
    guard let lastPort = core.state.withLock({ $0.stopped ? $0.port : nil }) else { return nil }
    let listener = makeListener?()
    let began = core.state.withLock { state -> Bool in
      guard state.stopped else { return false }  // another call began it meanwhile
      state.run = Run(generation: state.run.generation + 1, listener: listener)
      state.stopped = false
      state.listening = false
      state.publishedName = nil
      return true
    }
    if !began { listener?.stop() }
    return began ? lastPort : nil
  }

  /// Starts the listener (if any and not yet started by ``listen()``), connects to
  /// avahi-daemon, publishes the service and waits until it is established on the network
  /// (typically under a second: Avahi probes the name first). After ``stop()`` it begins a new
  /// run, with new ``events`` and ``invitations`` sequences.
  ///
  /// If avahi-daemon is unavailable the listener keeps running (until ``stop()``), so
  /// invitations by direct address still arrive.
  ///
  /// - Returns: The published instance name, which differs from the display name after a
  ///   collision.
  /// - Throws: ``DiscoveryError/discoveryUnavailable(reason:)`` when avahi-daemon or the system
  ///   bus is not running; ``DiscoveryError/registrationFailed(reason:)`` when the daemon refuses
  ///   the service; ``DiscoveryError/portInUse(port:)`` or
  ///   ``DiscoveryError/cannotListen(port:reason:)`` when the port cannot be bound;
  ///   ``DiscoveryError/stopped`` when ``stop()`` is called (or the task is cancelled) before
  ///   the service is established, or when the service is already published.
  public func start() async throws(DiscoveryError) -> String {
    try await listen()
    let generation = core.state.withLock { $0.run.generation }
    do {
      return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { waiter in
          do {
            try begin(waiter: waiter)
          } catch {
            waiter.resume(throwing: error)
          }
        }
      } onCancel: {
        // This run only: a task cancelled late must not stop a run begun after it.
        stop(generation: generation)
      }
    } catch let error as DiscoveryError {
      throw error
    } catch {
      throw .stopped
    }
  }

  /// Withdraws the service (peers see it removed within about a second), disconnects from
  /// avahi-daemon, stops listening and finishes this run's ``events`` and ``invitations``
  /// (invitations already taken stay answerable). Idempotent; ``start()`` or ``listen()``
  /// begins a new run.
  public func stop() {
    stop(generation: nil)
  }

  /// Stops the run `generation` (any run when nil).
  private func stop(generation: UInt64?) {
    let (connection, publication, waiter, run) = core.state.withLock { state in
      if let generation, generation != state.run.generation {
        return (
          AvahiConnection?.none, AvahiPublication?.none,
          CheckedContinuation<String, any Error>?.none, Run?.none
        )
      }
      let wasRunning = !state.stopped
      state.stopped = true
      defer {
        state.connection = nil
        state.publication = nil
        state.waiter = nil
      }
      return (state.connection, state.publication, state.waiter, wasRunning ? state.run : nil)
    }
    if let connection, let publication {
      connection.withLock { _ in publication.withdraw() }
      connection.close()
    }
    run?.listener?.stop()
    waiter?.resume(throwing: DiscoveryError.stopped)
    run?.continuation.finish()
  }

  private func begin(waiter: CheckedContinuation<String, any Error>) throws(DiscoveryError) {
    let generation = core.state.withLock { $0.run.generation }
    let publication = AvahiPublication(
      name: peer.displayName, type: serviceType.dnsSDType, port: self.port,
      txt: discoveryInfo.encodedEntries
    ) { [core, generation] event in
      // The core, never self: were the poll thread to hold the last reference to the
      // advertiser, its deinit (which stops and joins the poll thread) would run there.
      core.publicationReported(event, generation: generation)
    }
    try core.state.withLock { state throws(DiscoveryError) in
      guard !state.stopped, state.publication == nil, state.run.generation == generation else {
        throw .stopped
      }
      state.waiter = waiter
      state.publication = publication
    }
    // Outside our mutex: Avahi callbacks take it, and the first one runs inside this call.
    let connection: AvahiConnection
    do {
      connection = try AvahiConnection { event in publication.handle(event) }
    } catch {
      let stillWaiting = core.state.withLock { state in
        state.publication = nil
        defer { state.waiter = nil }
        return state.waiter != nil
      }
      // Unless stop() or a callback has resumed the waiter already.
      if stillWaiting { throw error }
      return
    }
    let stoppedMeanwhile = core.state.withLock { state in
      if !state.stopped { state.connection = connection }
      return state.stopped
    }
    if stoppedMeanwhile {
      connection.close()
    }
  }
}

/// Why a listener could not bind `port`, as a ``DiscoveryError``.
private func listenFailure(_ error: any Error, port: UInt16) -> DiscoveryError {
  if (error as? IOError)?.errnoCode == EADDRINUSE { return .portInUse(port: port) }
  return .cannotListen(port: port, reason: plainSocketError(error))
}
