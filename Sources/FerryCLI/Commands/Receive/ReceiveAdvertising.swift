import Ferry
import Foundation

/// What `ferry receive` says about being found: the `advertising` event and line, renames,
/// avahi-daemon going and coming back, and — for a receiver started before avahi-daemon (at
/// boot, say) — advertising as soon as the daemon appears.
struct ReceiveAdvertising: Sendable {
  let advertiser: Advertiser
  let output: EventWriter
  let displayName: String
  let fingerprint: Fingerprint
  let serviceType: ServiceType
  let destination: URL

  /// How often a receiver that is not advertised asks for avahi-daemon again.
  static let retryInterval: Duration = .seconds(3)

  /// Publishes the service; without avahi-daemon, says so (the listener keeps running) and
  /// keeps trying in the background. Returns the name published, or the display name.
  ///
  /// - Throws: ``CLIFailure`` when avahi-daemon refuses the service.
  func start() async throws -> String {
    do {
      let published = try await advertiser.start()
      announce(published, discoverable: true)
      return published
    } catch .discoveryUnavailable(let reason) {
      // Still useful: senders can connect with --address.
      output.emit(DiscoveryOutage(reason: reason), as: .discoveryUnavailable)
      let addresses = LocalAddresses.all()
      let these =
        addresses.count > 1
        ? " (this machine's addresses: \(addresses.prefix(6).joined(separator: ", ")))" : ""
      output.note(
        "Not advertised: avahi-daemon is unavailable (\(reason)). Nearby machines cannot find "
          + "this one until it starts; they can still send with 'ferry send --address "
          + "\(LocalAddresses.example(port: advertiser.port))'\(these). Start avahi-daemon "
          + "(e.g. 'sudo service avahi-daemon start') to be found.")
      announce(displayName, discoverable: false)
      Task { await advertiseWhenAvailable() }
      return displayName
    } catch {
      throw cliFailure(error)
    }
  }

  /// Emits `renamed` (if Avahi picked another name) and `advertising`.
  private func announce(_ published: String, discoverable: Bool) {
    if published != displayName { reportRenamed(from: displayName, to: published) }
    output.emit(
      Advertising(
        name: published, fingerprint: fingerprint.hexString, service: serviceType.dnsSDType,
        port: Int(advertiser.port), dir: destination.path, discoverable: discoverable))
  }

  /// Tries to publish every ``retryInterval`` until avahi-daemon answers, the advertiser is
  /// stopped, or the daemon refuses the service.
  private func advertiseWhenAvailable() async {
    while true {
      try? await Task.sleep(for: Self.retryInterval)
      do {
        let published = try await advertiser.start()
        announce(published, discoverable: true)
        output.note("avahi-daemon is running now: advertised as '\(published)'.")
        return
      } catch .discoveryUnavailable {
        continue
      } catch {
        // Stopped, or refused by the daemon: a refusal also reaches follow() as `.failed`,
        // which reports it.
        return
      }
    }
  }

  /// Reports later renames and avahi-daemon restarts (the first registration's rename is
  /// reported by ``start()``).
  func follow() async {
    var initialRegistration = true
    for await event in advertiser.events {
      switch event {
      case .published:
        initialRegistration = false
      case .renamed where initialRegistration:
        break
      case .renamed(let from, let to):
        reportRenamed(from: from, to: to)
      case .daemonDisconnected(let reason):
        output.emit(DiscoveryOutage(reason: reason), as: .discoveryInterrupted)
        output.note("avahi-daemon went away (\(reason)); advertising again when it returns.")
      case .failed(let error):
        output.emit(DiscoveryFailed(message: error.description))
        output.note("Advertising failed: \(error). Senders can still use --address.")
      }
    }
  }

  private func reportRenamed(from: String, to: String) {
    output.emit(Renamed(from: from, to: to))
    output.note("The name '\(from)' is taken on the network; advertising as '\(to)'.")
  }
}
