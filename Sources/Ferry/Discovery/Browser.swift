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
/// released). A peer seen on several interfaces or IP versions is reported once, with all its
/// addresses. If avahi-daemon restarts, every peer is reported lost and found again when the
/// daemon is back.
public final class Browser: Sendable {
  /// The service type browsed.
  public let serviceType: ServiceType
  /// Peers as they are found, change and are lost. Finishes after ``stop()``; throws
  /// ``DiscoveryError/browsingFailed(reason:)`` if avahi-daemon stops browsing.
  public let events: AsyncThrowingStream<BrowserEvent, any Error>

  private let continuation: AsyncThrowingStream<BrowserEvent, any Error>.Continuation
  private let engine: AvahiServiceBrowser
  private let connection: Mutex<AvahiConnection?>

  /// Connects to avahi-daemon and starts browsing.
  ///
  /// - Parameter serviceType: The service type, `_ferry._tcp` by default.
  /// - Throws: ``DiscoveryError/discoveryUnavailable(reason:)`` when avahi-daemon or the system
  ///   bus is not running.
  public init(serviceType: ServiceType = .ferry) throws(DiscoveryError) {
    self.serviceType = serviceType
    let (events, continuation) = AsyncThrowingStream<BrowserEvent, any Error>.makeStream()
    self.events = events
    self.continuation = continuation
    let engine = AvahiServiceBrowser(
      serviceType: serviceType,
      report: { event in
        FerryLogging.logger.debug("\(serviceType): \(event)")
        continuation.yield(event)
      },
      failed: { reason in
        FerryLogging.logger.notice("browsing \(serviceType) failed: \(reason)")
        continuation.finish(throwing: DiscoveryError.browsingFailed(reason: reason))
      })
    self.engine = engine
    let connection = try AvahiConnection { event in engine.handle(event) }
    connection.withLock { _ in engine.connection = connection }
    self.connection = Mutex(connection)
  }

  deinit {
    stop()
  }

  /// The peers found and not lost so far, sorted by name.
  public var peers: [DiscoveredPeer] {
    engine.peers
  }

  /// Stops browsing, disconnects from avahi-daemon and finishes ``events``. Idempotent.
  public func stop() {
    let connection = self.connection.withLock { connection in
      defer { connection = nil }
      return connection
    }
    if let connection {
      connection.withLock { _ in engine.stop() }
      connection.close()
    }
    continuation.finish()
  }
}
