import ArgumentParser
import Ferry
import Foundation
import Synchronization

/// `ferry browse`: lists peers as they appear and disappear.
struct BrowseCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "browse",
    abstract: "List Ferry peers on the local network as they come and go.",
    discussion: """
      Each peer is printed when it is found ('+'), when its addresses or records change ('~') \
      and when it leaves ('-'): when its records are withdrawn or expire, or when its port has \
      not answered twice in a row (tried every 2 s: within 10 s). Beyond mDNS, after 2 s: known peers that \
      answer where they were last reached and named addresses ('ferry peers') that answer, \
      which mDNS does not find (another subnet), each said once, with where it was found. Without --timeout, browsing goes on \
      until Ctrl-C (exit 130).
      With --timeout, ferry exits 0 if it found at least one peer and 3 if it found none.

      Examples:
        ferry browse
        ferry browse --timeout 3 --json | jq -r 'select(.event=="peer-found")|.name'
        ferry browse --service my-app
        ferry browse --domain example.org   # and a unicast DNS-SD domain
        ferry browse --localsend --timeout 5   # LocalSend apps too (phones, laptops)
      """)

  @OptionGroup var logging: LogOptions

  @OptionGroup var domainOptions: DiscoveryOptions

  @Option(
    parsing: .unconditional,
    help: "The DNS-SD service type to browse (RFC 6335 name, e.g. 'ferry' or '_ferry._tcp').")
  var service: String = ServiceType.ferry.name

  @Option(help: "Stop after this many seconds.")
  var timeout: Double?

  @Flag(
    name: [.short, .long],
    help: "Write one JSON object per line to stdout (peer-found, peer-updated, peer-lost).")
  var json = false

  @Flag(
    name: .customLong("localsend"),
    help: ArgumentHelp(
      "Also list LocalSend devices (LocalSend's multicast discovery: this machine announces "
        + "itself so that they answer)."))
  var localSend = false

  func validate() throws {
    if let timeout, !(timeout > 0) {
      throw ValidationError("--timeout must be a positive number of seconds")
    }
  }

  func run() async throws {
    let output = EventWriter(json: json)
    let serviceType = try parseServiceType(service)
    let localSend = self.localSend ? LocalSendBrowsing(output: output, json: json) : nil
    let discovery = try await localSend?.start(
      identity: try loadIdentity(), name: ProcessInfo.processInfo.hostName)
    defer { discovery?.stop() }
    let domains = try domainOptions.resolved()
    let browser: Browser
    do {
      browser = try Browser(serviceType: serviceType, domains: domains)
    } catch {
      guard localSend != nil else { throw cliFailure(error) }
      // LocalSend needs no avahi-daemon: its devices are still listed.
      output.note("Ferry peers are not visible (\(error)); listing LocalSend devices only.")
      if let timeout {
        try? await Task.sleep(for: .seconds(timeout))
      } else {
        while !Interrupts.wasInterrupted { try? await Task.sleep(for: .milliseconds(200)) }
      }
      return try finish(foundAny: (localSend?.found ?? 0) > 0, serviceType: serviceType)
    }
    Interrupts.onInterrupt { browser.stop() }
    // Nothing may be around for a while: say that it is looking, not hung.
    output.note(
      "Looking for Ferry peers (\(serviceType.name))"
        + (localSend == nil ? "" : " and LocalSend devices")
        + (timeout.map { " for \(wholeNumber($0)) s" } ?? "; press Ctrl-C to stop") + "…")
    if let timeout {
      Task {
        try? await Task.sleep(for: .seconds(timeout))
        browser.stop()
      }
    }
    // A peer whose machine or link went stays listed until its records expire: its port says
    // so sooner.
    let probe = BrowseProbe()
    let json = json
    let probing = Task {
      await probe.run(browser) { peer in
        output.emit(PeerLost(peer, reason: "unreachable"))
        if !json { output.say("- \(peer.peerID?.description ?? peer.name) (not answering)") }
      } back: { peer in
        output.emit(PeerSeen(peer), as: .peerFound)
        if !json { output.say("+ \(Self.humanLine(peer, labelled: localSend != nil))") }
      }
    }
    defer { probing.cancel() }
    // Beyond mDNS: known peers answering where they were last reached, named addresses.
    let timeout = self.timeout
    // The keys mDNS found in this browse (the browser lists none once it stops).
    let seenKeys = Mutex<Set<String>>([])
    let remembered =
      serviceType == .ferry
      ? Task {
        await BrowseRemembered.list(
          seen: { seenKeys.withLock { $0 } }, output: output, json: json,
          until: timeout.map { .seconds($0) })
      } : nil
    defer { remembered?.cancel() }
    var foundAny = false
    do {
      for try await event in browser.events {
        switch event {
        case .found(let peer):
          foundAny = true
          if let key = peer.info.fingerprint?.hexString {
            seenKeys.withLock { _ = $0.insert(key) }
          }
          _ = probe.reset(peer)
          output.emit(PeerSeen(peer), as: .peerFound)
          if !json { output.say("+ \(Self.humanLine(peer, labelled: localSend != nil))") }
        case .updated(let peer):
          // A peer reported gone stays so while its records change (a dead machine's expire
          // one by one): it is found again when it answers.
          guard !probe.isGone(peer) else { continue }
          output.emit(PeerSeen(peer), as: .peerUpdated)
          if !json { output.say("~ \(Self.humanLine(peer, labelled: localSend != nil))") }
        case .lost(let peer):
          // Reported already when it stopped answering.
          guard !probe.reset(peer) else { continue }
          output.emit(PeerLost(peer))
          if !json { output.say("- \(peer.peerID?.description ?? peer.name)") }
        }
      }
    } catch let error as DiscoveryError {
      throw cliFailure(error)
    }
    // The browse is over (its timeout, Ctrl-C): what is still being tried is not waited for.
    remembered?.cancel()
    let listed = await remembered?.value ?? 0
    try finish(
      foundAny: foundAny || listed > 0 || (localSend?.found ?? 0) > 0, serviceType: serviceType)
  }

  /// With `--timeout`, exit 3 when nothing was found.
  private func finish(foundAny: Bool, serviceType: ServiceType) throws(CLIFailure) {
    if timeout != nil && !foundAny {
      throw CLIFailure(
        status: .noPeer,
        message: "no peer of \(serviceType) found within \(timeout!.formatted()) s",
        code: .noPeer)
    }
  }

  /// `labelled`: "Ferry" after the name, as LocalSend devices listed beside it say
  /// "LocalSend".
  private static func humanLine(_ peer: DiscoveredPeer, labelled: Bool = false) -> String {
    let who =
      (peer.peerID?.description ?? "\(peer.name) [not a Ferry peer: no fingerprint]")
      + (labelled ? " Ferry" : "")
    let addresses = peer.addresses.map {
      "\($0.hostPortString(port: peer.port)) on \($0.interface)"
    }
    return "\(who)  \(addresses.joined(separator: ", "))  (\(peer.hostName))"
  }
}

/// The JSON fields describing a discovered peer, shared by the peer-* events.
