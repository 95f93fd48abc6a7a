import Ferry
import FerryLocalSend
import Foundation

/// LocalSend discovery as a sending or browsing device does it: multicast announcements, and a
/// server that answers `register` and `info` and takes no files. Devices answer an
/// announcement by `POST /register` to the port it names — LocalSend 1.18 only so — and a
/// device that started before this one is found that way.
struct LocalSendLookout: Sendable {
  /// What is heard: announcements, multicast answers and registrations.
  let discovery: LocalSendDiscovery
  /// The server registrations come to (nil when none could listen: devices are then heard
  /// only when they announce themselves).
  let server: LocalSendServer?
  /// Asks the config's `[discovery] localsend_scan` addresses every minute (nil: none).
  let scanning: Task<Void, Never>?

  /// Starts the server (on any free port: devices answer at the port announced, and LocalSend's
  /// own stays free for a receiver or an app on this machine) and discovery, as `me`'s alias,
  /// announcing the server's port.
  ///
  /// - Throws: ``CLIFailure`` (`discovery-unavailable`, exit 6) when no interface has
  ///   multicast.
  static func start(identity: Identity, alias: String) async throws(CLIFailure)
    -> LocalSendLookout
  {
    var server: LocalSendServer?
    // A device that presents no certificate may still register (third-party apps do): its
    // sighting is unproven, and sending to it pins its server's certificate to the key it
    // announced.
    if let candidate = try? LocalSendServer(
      LocalSendServer.Configuration(
        identity: identity, alias: alias, port: 0, senderCheck: .allowUnverified,
        receives: false)),
      (try? await candidate.start()) != nil
    {
      server = candidate
    }
    let fallback = LocalSendDevice(
      alias: alias, deviceModel: "Ferry", deviceType: "headless",
      fingerprint: identity.fingerprint.hexString, port: Int(LocalSendProtocol.defaultPort),
      protocol: "https", download: false)
    let discovery: LocalSendDiscovery
    do {
      discovery = try LocalSendDiscovery(
        me: { [server] in server?.device ?? fallback }, identity: identity)
      try await discovery.start()
    } catch {
      server?.stop()
      throw CLIFailure(
        status: .discoveryUnavailable,
        message: "cannot look for LocalSend devices: \(ErrorWords.describe(error))",
        code: .discoveryUnavailable)
    }
    // Where multicast does not reach: the config's addresses, asked every minute.
    let scan = SharedConfig.localSendScan
    let scanning =
      scan.isEmpty
      ? nil
      : Task {
        while !Task.isCancelled {
          await discovery.scan(scan)
          try? await Task.sleep(for: LocalSendDiscovery.scanInterval)
        }
      }
    if let server {
      Task {
        for await registration in server.registrations {
          discovery.heard(
            registration: registration.device, from: registration.address,
            proven: registration.proven)
        }
      }
    }
    return LocalSendLookout(discovery: discovery, server: server, scanning: scanning)
  }

  /// Stops announcing, listening, serving and scanning.
  func stop() {
    scanning?.cancel()
    discovery.stop()
    server?.stop()
  }
}
