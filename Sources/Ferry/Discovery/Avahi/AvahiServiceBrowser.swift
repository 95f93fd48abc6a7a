import CAvahi
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Browses one service type through an ``AvahiConnection``, on the local network and in any
/// wide-area domains asked for (one Avahi browser each), and resolves every instance it sees,
/// keeping each resolver open so that address and TXT changes are reported too.
///
/// Poll-thread confined, like ``AvahiPublication``.
final class AvahiServiceBrowser: @unchecked Sendable {
  private let type: String
  private let report: (BrowserEvent) -> Void
  private let failed: (String) -> Void
  private var aggregator: PeerAggregator
  /// The domains browsed besides the default (`local`).
  private let domains: [String]
  /// One Avahi browser per domain, the default first; empty before the client runs.
  private var browsers: [OpaquePointer] = []
  /// While the browsers are being made: their first events may come before they are listed.
  private var creating = false
  /// The browsers that said ALL_FOR_NOW.
  private var heard: Set<OpaquePointer> = []
  private var resolvers: [PeerAggregator.InstanceKey: OpaquePointer] = [:]
  /// Instances whose resolver has not reported yet.
  private var unresolved: Set<PeerAggregator.InstanceKey> = []
  /// Instances resolving an address of any family, after their own family's lookup failed.
  private var resolvingAnyFamily: Set<PeerAggregator.InstanceKey> = []
  /// Peers found but not reported yet, by peer key: their other instances are still resolving.
  private var held: Set<String> = []
  /// Peers that lost an instance but not all: the update waits briefly, since a peer leaving
  /// withdraws all its instances at once and should be reported only as lost.
  private var updateDue: Set<String> = []
  /// Instances still listed whose resolver failed after resolving them: their records expired
  /// or their host stopped answering (a machine switched off or its link gone says no
  /// goodbye, and its PTR record lives for an hour). Reported gone then, and resolved again
  /// every ``reresolveMilliseconds`` until they answer or their PTR goes.
  private var expired: Set<PeerAggregator.InstanceKey> = []
  /// Whether avahi-daemon said it has listed every instance it knows of for now
  /// (ALL_FOR_NOW), in this connection, in every domain.
  private var heardAll: Bool { !browsers.isEmpty && heard.count == browsers.count }
  private var stopped = false

  /// How long a newly found peer is held while its other instances resolve, so that the first
  /// report carries all its addresses (IPv4 and IPv6 typically resolve milliseconds apart).
  static let holdMilliseconds: UInt32 = 250

  /// How often an instance whose resolution expired is resolved again.
  static let reresolveMilliseconds: UInt32 = 10_000

  /// Schedules the release of held peers; set once the connection exists (under the lock).
  weak var connection: AvahiConnection?

  init(
    serviceType: ServiceType, domains: [String] = [], report: @escaping (BrowserEvent) -> Void,
    failed: @escaping (String) -> Void
  ) {
    self.type = serviceType.dnsSDType
    self.domains = domains
    self.aggregator = PeerAggregator(serviceType: serviceType)
    self.report = report
    self.failed = failed
  }

  /// What ``peers`` and ``hasSettled`` return: written on the poll thread after each change
  /// (the poll lock, then this leaf lock), read from any thread without touching Avahi.
  private let published = Mutex<(peers: [DiscoveredPeer], settled: Bool)>(([], false))

  /// The peers found so far. Any thread; takes no Avahi lock.
  var peers: [DiscoveredPeer] { published.withLock { $0.peers } }

  /// Whether every instance listed so far is resolved (or given up on) and avahi-daemon said
  /// it listed all it knows of for now. Any thread; takes no Avahi lock.
  var hasSettled: Bool { published.withLock { $0.settled } }

  /// Copies the aggregator's peers for ``peers``, and whether the browse has settled (on the
  /// poll thread).
  private func publishPeers() {
    let now = aggregator.peers
    let settled = heardAll && unresolved.isEmpty
    published.withLock { $0 = (now, settled) }
  }

  /// Feeds a connection event to the browser.
  func handle(_ event: AvahiConnectionEvent) {
    guard !stopped else { return }
    switch event {
    case .running(let client):
      guard browsers.isEmpty else { return }
      creating = true
      defer { creating = false }
      for domain in [nil] + domains.map(Optional.some) {
        let browser = withOptionalCString(domain) { domain in
          avahi_service_browser_new(
            client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), type,
            domain, AvahiLookupFlags(0), serviceBrowserCallback,
            Unmanaged.passUnretained(self).toOpaque())
        }
        guard let browser else {
          let reason = avahiErrorMessage(avahi_client_errno(client))
          // A wide-area domain avahi-daemon cannot browse costs that domain only.
          guard domain == nil else {
            FerryLogging.logger.notice("cannot browse domain \(domain!): \(reason)")
            continue
          }
          return failed(reason)
        }
        browsers.append(browser)
      }
    case .registering:
      break
    case .disconnected:
      // The old client freed the browsers and resolvers with itself.
      browsers = []
      heard = []
      resolvers = [:]
      unresolved = []
      resolvingAnyFamily = []
      expired = []
      let lost = aggregator.removeAll().filter { !held.contains(aggregator.peerKey(of: $0.peer)) }
      publishPeers()
      held = []
      updateDue = []
      for event in lost {
        report(event)
      }
    }
  }

  /// Frees the browser and resolvers (under the lock).
  func stop() {
    stopped = true
    published.withLock { $0 = ([], false) }
    for resolver in resolvers.values {
      avahi_service_resolver_free(resolver)
    }
    resolvers = [:]
    for browser in browsers {
      avahi_service_browser_free(browser)
    }
    browsers = []
    heard = []
  }

  fileprivate func browserEvent(
    _ changed: OpaquePointer, event: AvahiBrowserEvent, interface: AvahiIfIndex,
    protocol family: AvahiProtocol, name: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?
  ) {
    guard !stopped, creating || browsers.contains(changed) else { return }
    switch event {
    case AVAHI_BROWSER_NEW:
      guard let name, let domain else { return }
      let key = instanceKey(interface, family, name, domain)
      guard resolvers[key] == nil else { return }
      // Each instance asks for an address of its own family: with AVAHI_PROTO_UNSPEC, Avahi
      // may answer the IPv4 instance with the AAAA record too, and the peer's IPv4 address
      // would never be seen.
      if let resolver = newResolver(
        avahi_service_browser_get_client(changed), interface, family, name, domain,
        addressFamily: family)
      {
        resolvers[key] = resolver
        unresolved.insert(key)
        publishPeers()
      }
    case AVAHI_BROWSER_REMOVE:
      guard let name, let domain else { return }
      let key = instanceKey(interface, family, name, domain)
      if let resolver = resolvers.removeValue(forKey: key) {
        avahi_service_resolver_free(resolver)
      }
      unresolved.remove(key)
      resolvingAnyFamily.remove(key)
      // Reported gone already if its resolution had expired.
      if expired.remove(key) == nil { instanceGone(key) }
    case AVAHI_BROWSER_FAILURE:
      let reason = avahiErrorMessage(avahi_client_errno(avahi_service_browser_get_client(changed)))
      guard changed == browsers.first else {
        // A wide-area domain that fails (its DNS server does not answer, wide-area lookups
        // are off in avahi-daemon) costs that domain only: it has said all it will.
        FerryLogging.logger.notice("browsing a wide-area domain failed: \(reason)")
        heard.insert(changed)
        publishPeers()
        return
      }
      failed(reason)
    case AVAHI_BROWSER_ALL_FOR_NOW:
      heard.insert(changed)
      publishPeers()
    default:  // CACHE_EXHAUSTED
      break
    }
  }

  fileprivate func resolverEvent(
    _ resolver: OpaquePointer, event: AvahiResolverEvent, interface: AvahiIfIndex,
    protocol family: AvahiProtocol, name: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?,
    hostName: UnsafePointer<CChar>?, address: UnsafePointer<AvahiAddress>?, port: UInt16,
    txt: UnsafeMutablePointer<AvahiStringList>?
  ) {
    guard !stopped, let name, let domain else { return }
    let key = instanceKey(interface, family, name, domain)
    guard resolvers[key] == resolver else { return }
    switch event {
    case AVAHI_RESOLVER_FOUND:
      guard let address, let resolved = discoveredAddress(address, interface: interface) else {
        return
      }
      let resolution = PeerAggregator.Resolution(
        hostName: hostName.map { String(cString: $0) } ?? "", port: port, address: resolved,
        txt: txtEntries(txt))
      unresolved.remove(key)
      expired.remove(key)
      let event = aggregator.resolved(key, resolution)
      publishPeers()
      if held.contains(key.peerKey) {
        releaseIfResolved(key.peerKey)
      } else if case .found = event, let connection, isResolving(key.peerKey) {
        held.insert(key.peerKey)
        connection.schedule(afterMilliseconds: Self.holdMilliseconds) { [weak self] in
          self?.release(key.peerKey)
        }
      } else {
        updateDue.remove(key.peerKey)
        event.map(report)
      }
    default:
      // Resolution timed out (the host does not answer), or the records of a resolved
      // instance expired. Drop the resolver.
      resolvers.removeValue(forKey: key)
      let client = avahi_service_resolver_get_client(resolver)
      // `name` and `domain` belong to the resolver: copied before it is freed (using them
      // after made libdbus abort the process on the garbage it then read).
      let serviceName = String(cString: name)
      let serviceDomain = String(cString: domain)
      avahi_service_resolver_free(resolver)
      // Resolved before, or resolving an expired one again: gone (once) while still listed,
      // and tried again later — a machine back on its link is found again.
      guard unresolved.contains(key) else {
        if expired.insert(key).inserted { instanceGone(key) }
        reresolveLater(key, interface, family, name: serviceName, domain: serviceDomain)
        return
      }
      // The host may lack an address of the instance's family (e.g. it publishes only AAAA
      // records over IPv4): ask once more for any family before giving up.
      if resolvingAnyFamily.insert(key).inserted, unresolved.contains(key),
        let retry = serviceName.withCString({ name in
          serviceDomain.withCString { domain in
            newResolver(
              client, interface, family, name, domain,
              addressFamily: AvahiProtocol(AVAHI_PROTO_UNSPEC))
          }
        })
      {
        resolvers[key] = retry
        return
      }
      unresolved.remove(key)
      releaseIfResolved(key.peerKey)
      publishPeers()
      // Listed but never answering (a machine off while its records are still cached): tried
      // again later like an expired one, so that it is found when it comes back.
      expired.insert(key)
      reresolveLater(key, interface, family, name: serviceName, domain: serviceDomain)
    }
  }

  /// Takes `key`'s resolution out of its peer and reports what that changes: the peer lost
  /// (its last instance), or updated after a short wait (another may be going too).
  private func instanceGone(_ key: PeerAggregator.InstanceKey) {
    let event = aggregator.removed(key)
    publishPeers()
    if held.contains(key.peerKey) {
      if case .lost = event {
        held.remove(key.peerKey)  // Never reported, so nothing to take back.
      } else {
        releaseIfResolved(key.peerKey)
      }
    } else if case .updated = event, let connection {
      if updateDue.insert(key.peerKey).inserted {
        connection.schedule(afterMilliseconds: Self.holdMilliseconds) { [weak self] in
          self?.reportDueUpdate(key.peerKey)
        }
      }
    } else {
      if case .lost = event { updateDue.remove(key.peerKey) }
      event.map(report)
    }
  }

  /// Resolves an expired instance (``expired``) again in ``reresolveMilliseconds``, unless it
  /// is withdrawn, found again or the browser stops meanwhile.
  private func reresolveLater(
    _ key: PeerAggregator.InstanceKey, _ interface: AvahiIfIndex, _ family: AvahiProtocol,
    name: String, domain: String
  ) {
    connection?.schedule(afterMilliseconds: Self.reresolveMilliseconds) { [weak self] in
      guard let self, !self.stopped, self.expired.contains(key), self.resolvers[key] == nil,
        let browser = self.browsers.first,
        let resolver = name.withCString({ name in
          domain.withCString { domain in
            self.newResolver(
              avahi_service_browser_get_client(browser), interface, family, name, domain,
              // The address family that resolved it before (its own, or any).
              addressFamily: self.resolvingAnyFamily.contains(key)
                ? AvahiProtocol(AVAHI_PROTO_UNSPEC) : family)
          }
        })
      else { return }
      self.resolvers[key] = resolver
    }
  }

  private func newResolver(
    _ client: OpaquePointer?, _ interface: AvahiIfIndex,
    _ family: AvahiProtocol, _ name: UnsafePointer<CChar>, _ domain: UnsafePointer<CChar>,
    addressFamily: AvahiProtocol
  ) -> OpaquePointer? {
    avahi_service_resolver_new(
      client, interface, family, name, type, domain, addressFamily, AvahiLookupFlags(0),
      serviceResolverCallback, Unmanaged.passUnretained(self).toOpaque())
  }

  private func isResolving(_ peerKey: String) -> Bool {
    unresolved.contains { $0.peerKey == peerKey }
  }

  private func releaseIfResolved(_ peerKey: String) {
    if held.contains(peerKey) && !isResolving(peerKey) {
      release(peerKey)
    }
  }

  /// Reports the current state of a peer that lost an instance, unless it was lost meanwhile.
  private func reportDueUpdate(_ peerKey: String) {
    guard !stopped, updateDue.remove(peerKey) != nil,
      let peer = aggregator.peers.first(where: { aggregator.peerKey(of: $0) == peerKey })
    else { return }
    report(.updated(peer))
  }

  /// Reports a held peer as found, with everything resolved so far.
  private func release(_ peerKey: String) {
    guard !stopped, held.remove(peerKey) != nil,
      let peer = aggregator.peers.first(where: { aggregator.peerKey(of: $0) == peerKey })
    else { return }
    report(.found(peer))
  }
}

private func instanceKey(
  _ interface: AvahiIfIndex, _ family: AvahiProtocol, _ name: UnsafePointer<CChar>,
  _ domain: UnsafePointer<CChar>
) -> PeerAggregator.InstanceKey {
  PeerAggregator.InstanceKey(
    interfaceIndex: interface, protocolFamily: family, name: String(cString: name),
    domain: String(cString: domain))
}

private let serviceBrowserCallback: AvahiServiceBrowserCallback = {
  browser, interface, family, event, name, _, domain, _, userdata in
  guard let browser, let userdata else { return }
  Unmanaged<AvahiServiceBrowser>.fromOpaque(userdata).takeUnretainedValue()
    .browserEvent(
      browser, event: event, interface: interface, protocol: family, name: name, domain: domain)
}

private let serviceResolverCallback: AvahiServiceResolverCallback = {
  resolver, interface, family, event, name, _, domain, hostName, address, port, txt, _,
  userdata in
  guard let resolver, let userdata else { return }
  Unmanaged<AvahiServiceBrowser>.fromOpaque(userdata).takeUnretainedValue()
    .resolverEvent(
      resolver, event: event, interface: interface, protocol: family, name: name,
      domain: domain, hostName: hostName, address: address, port: port, txt: txt)
}
