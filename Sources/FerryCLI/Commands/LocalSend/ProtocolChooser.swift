import Ferry
import FerryAgent
import FerryLocalSend
import Foundation
import Synchronization

/// `ferry send --localsend --to NAME|FINGERPRINT`: looks for the receiver among Ferry peers
/// (Avahi) and LocalSend devices (multicast) at once, and says which protocol reaches it.
///
/// One key heard both ways (a `ferry receive --localsend`) is reached by Ferry, which resumes
/// and verifies more; different receivers under one name need `--protocol`. Without an
/// avahi-daemon, LocalSend devices are still found (and the note says Ferry peers are not).
struct ProtocolChooser: Sendable {
  /// The protocol that reaches the receiver.
  enum Choice: Sendable {
    /// A Ferry peer: the Ferry send finds it again (from Avahi's cache, at once).
    case ferry
    /// A LocalSend device, found.
    case localSend(LocalSendTargets.Found)
  }

  let targets: LocalSendTargets
  let serviceType: ServiceType
  let output: EventWriter
  /// Unicast DNS-SD domains looked in for Ferry peers besides the local network.
  var domains: [BrowseDomain] = []

  /// How long after the first match the other protocol may still answer: LocalSend devices
  /// answer announcements sent at once, after 0.5 s and after 2 s.
  static let settle: Duration = .milliseconds(2500)

  /// Finds `wanted` (classified as `reference`) by either protocol before `deadline`.
  ///
  /// Runs on the caller's task; polls both discoveries every 50 ms.
  ///
  /// - Throws: ``CLIFailure``: nothing named so (exit 3); a Ferry peer and a LocalSend device
  ///   with different keys under the name (exit 2, `ambiguous-peer`); what
  ///   ``LocalSendTargets/pick(_:heard:wanted:)`` throws for the device.
  func choose(
    _ wanted: String, as reference: PeerReference, until deadline: ContinuousClock.Instant
  ) async throws(CLIFailure) -> Choice {
    let browser: Browser
    do {
      browser = try Browser(serviceType: serviceType, domains: domains)
    } catch {
      output.note("Ferry peers are not visible (\(error)); looking for LocalSend devices only.")
      return .localSend(
        try await targets.discover(
          wanted, as: reference, until: deadline, upload: try targets.makeUpload()))
    }
    defer { browser.stop() }
    let lookout: LocalSendLookout
    do {
      lookout = try await targets.start()
    } catch {
      output.note("LocalSend devices are not visible (\(error.message)); Ferry peers only.")
      return .ferry
    }
    defer { lookout.stop() }
    let discovery = lookout.discovery
    output.note("Looking for '\(printable(wanted))' (Ferry and LocalSend)…")
    let heard = Mutex(LocalSendSightings())
    let listening = Task {
      for await sighting in discovery.sightings {
        let named = LocalSendTargets.names(sighting.device, wanted, reference)
        heard.withLock { $0.note(sighting, wanted: named) }
      }
    }
    defer { listening.cancel() }
    var firstMatch: ContinuousClock.Instant?
    while true {
      let ferry = browser.peers.filter { peer in
        guard let key = peer.info.fingerprint, peer.peerID != nil else { return false }
        return reference.matchesFingerprint(key) || reference.matchesName(peer.name)
      }
      let all = heard.withLock { $0.all }
      let local = all.filter { LocalSendTargets.names($0.device, wanted, reference) }
      if firstMatch == nil && !(ferry.isEmpty && local.isEmpty) { firstMatch = .now }
      let settled = firstMatch.map { ContinuousClock.now - $0 >= Self.settle } ?? false
      if settled || ContinuousClock.now >= deadline {
        return try await decide(wanted, as: reference, ferry: ferry, local: local, heard: all)
      }
      try? await Task.sleep(for: .milliseconds(50))
    }
  }

  private func decide(
    _ wanted: String, as reference: PeerReference, ferry: [DiscoveredPeer],
    local: [LocalSendSighting], heard: [LocalSendSighting]
  ) async throws(CLIFailure) -> Choice {
    switch (ferry.isEmpty, local.isEmpty) {
    case (true, true):
      throw CLIFailure(
        status: .noPeer,
        message: "no Ferry receiver or LocalSend device '\(printable(wanted))' answered on "
          + "this network; is ferry receive (or LocalSend, open) running on it, on the same "
          + "network? 'ferry browse --localsend' lists who can be seen; --address HOST:PORT "
          + "reaches one whose announcements do not get here",
        code: .noPeer)
    case (false, true):
      return .ferry
    case (true, false):
      return .localSend(
        try await targets.pick(
          local, heard: heard, wanted: wanted, reference: reference,
          upload: try targets.makeUpload()))
    case (false, false):
      let keys = Set(
        ferry.compactMap { $0.info.fingerprint?.hexString }
          + local.map { LocalSendSightings.key($0.device.fingerprint) })
      guard keys.count > 1 else {
        output.note(
          "'\(printable(wanted))' answers by Ferry and by LocalSend with one key: sending by "
            + "Ferry (--protocol localsend sends by LocalSend).")
        return .ferry
      }
      let lines =
        ferry.map { "  Ferry      \($0.peerID?.description ?? printable($0.name))" }
        + local.map {
          "  LocalSend  \(DisplayText.quoted($0.device.alias)) "
            + "[\(printable(String($0.device.fingerprint.prefix(16))))]  \($0.address)"
        }
      throw CLIFailure(
        status: .usage,
        message: "'\(printable(wanted))' names a Ferry receiver and a LocalSend device; choose "
          + "with --protocol ferry or --protocol localsend instead of --localsend (or --to more "
          + "of the fingerprint):\n"
          + lines.joined(separator: "\n"),
        code: .ambiguousPeer)
    }
  }
}
