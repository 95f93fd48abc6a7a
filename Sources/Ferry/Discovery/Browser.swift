import Synchronization

/// Finds peers of a service type on the local network through avahi-daemon, like
/// MultipeerConnectivity's `MCNearbyServiceBrowser`.
///
/// ```swift
/// let browser = try Browser(serviceType: .ferry)
/// for try await event in browser.events {
///   if case .found(let peer) = event { print(peer) }
/// }
/// ```
///
/// Browsing starts when the browser is created and runs until ``stop()`` (or the browser is
/// released); ``start()`` browses again after a stop (as MultipeerConnectivity apps do when a
/// peer is lost), each run with an ``events`` sequence of its own. A peer seen on several
/// interfaces or IP versions is reported once, with all its addresses. If avahi-daemon
/// restarts, every peer is reported lost and found again when the daemon is back.
public final class Browser: Sendable {
  /// The service type browsed.
  public let serviceType: ServiceType

  /// Peers as they are found, change and are lost, in the current run (or the last one, after
  /// ``stop()``). Finishes at ``stop()``; throws ``DiscoveryError/browsingFailed(reason:)`` if
  /// avahi-daemon stops browsing. After ``start()`` it is a new sequence: read it again. One
  /// reader at a time: a second one waiting at once stops the process (the rule of
  /// `AsyncThrowingStream`, "attempt to await next() on more than one task").
  public var events: AsyncThrowingStream<BrowserEvent, any Error> {
    run.withLock { $0.events }
  }

  /// One run of browsing, from a start to a stop.
  private struct Run {
    let events: AsyncThrowingStream<BrowserEvent, any Error>
    let continuation: AsyncThrowingStream<BrowserEvent, any Error>.Continuation
    let engine: AvahiServiceBrowser
    /// Nil once stopped.
    var connection: AvahiConnection?
  }

  private let run: Mutex<Run>

  /// The wide-area DNS-SD domains browsed besides the local network (`local`).
  public let domains: [BrowseDomain]

  /// Connects to avahi-daemon and starts browsing.
  ///
  /// - Parameters:
  ///   - serviceType: The service type, `_ferry._tcp` by default.
  ///   - domains: Unicast DNS-SD domains to browse as well (`example.org`: the PTR, SRV, TXT
  ///     and address records an administrator or a DNS UPDATE put there), through
  ///     avahi-daemon's wide-area lookups (its `enable-wide-area`, and the DNS servers it
  ///     reads from /etc/resolv.conf). A peer found in several domains is listed once per
  ///     domain (``DiscoveredPeer/domain``).
  /// - Throws: ``DiscoveryError/discoveryUnavailable(reason:)`` when avahi-daemon or the system
  ///   bus is not running.
  public init(serviceType: ServiceType = .ferry, domains: [BrowseDomain] = [])
    throws(DiscoveryError)
  {
    self.serviceType = serviceType
    var unique: [BrowseDomain] = []
    for domain in domains where !unique.contains(domain) && domain.name != "local" {
      unique.append(domain)
    }
    self.domains = unique
    self.run = Mutex(try Self.begin(serviceType, domains: unique))
  }

  deinit {
    stop()
  }

  /// Connects to avahi-daemon and browses `serviceType`: a new run.
  private static func begin(_ serviceType: ServiceType, domains: [BrowseDomain])
    throws(DiscoveryError) -> Run
  {
    let (events, continuation) = AsyncThrowingStream<BrowserEvent, any Error>.makeStream()
    let engine = AvahiServiceBrowser(
      serviceType: serviceType, domains: domains.map(\.name),
      report: { event in
        FerryLogging.logger.debug("\(serviceType): \(event)")
        continuation.yield(event)
      },
      failed: { reason in
        FerryLogging.logger.notice("browsing \(serviceType) failed: \(reason)")
        continuation.finish(throwing: DiscoveryError.browsingFailed(reason: reason))
      })
    let connection: AvahiConnection
    do {
      connection = try AvahiConnection { event in engine.handle(event) }
    } catch {
      continuation.finish(throwing: error)
      throw error
    }
    connection.withLock { _ in engine.connection = connection }
    return Run(events: events, continuation: continuation, engine: engine, connection: connection)
  }

  /// The peers found and not lost so far in the current run, sorted by name (none when
  /// stopped).
  public var peers: [DiscoveredPeer] {
    run.withLock { $0.connection == nil ? [] : $0.engine.peers }
  }

  /// Whether the browse has settled for now: avahi-daemon listed every instance it knows of
  /// (its ALL_FOR_NOW, about a second after a browse starts) and each is resolved or given up
  /// on. A moment to decide among ``peers``: a receiver still resolving is not missed. It
  /// becomes false again while an instance that appears later resolves. Any thread.
  public var hasSettled: Bool {
    run.withLock { $0.connection == nil ? false : $0.engine.hasSettled }
  }

  /// Whether it is browsing (created or started, and not stopped since).
  public var isBrowsing: Bool {
    run.withLock { $0.connection != nil }
  }

  /// Browses again after ``stop()``, with a new ``events`` sequence; does nothing while
  /// browsing (after ``DiscoveryError/browsingFailed(reason:)`` too: call ``stop()`` first).
  ///
  /// - Throws: ``DiscoveryError/discoveryUnavailable(reason:)`` when avahi-daemon or the system
  ///   bus is not running (it stays stopped).
  public func start() throws(DiscoveryError) {
    guard !isBrowsing else { return }
    let next = try Self.begin(serviceType, domains: domains)
    // A start racing another: the first one's run stays, the second one's is let go.
    let extra = run.withLock { run -> Run? in
      guard run.connection == nil else { return next }
      run = next
      return nil
    }
    if let extra { Self.end(extra) }
  }

  /// Stops browsing, disconnects from avahi-daemon and finishes ``events``. Idempotent; the
  /// browser can ``start()`` again.
  public func stop() {
    let stopped = run.withLock { run -> Run? in
      guard run.connection != nil else { return nil }
      defer { run.connection = nil }
      return run
    }
    if let stopped { Self.end(stopped) }
  }

  /// Ends a run (outside the lock: closing joins Avahi's thread).
  private static func end(_ run: Run) {
    if let connection = run.connection {
      connection.withLock { _ in run.engine.stop() }
      connection.close()
    }
    run.continuation.finish()
  }
}
