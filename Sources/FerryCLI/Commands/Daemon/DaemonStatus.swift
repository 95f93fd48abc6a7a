import Ferry
import FerryAPI
import FerryAgent
import FerryDaemon
import Foundation
import Synchronization

/// What `GET /v1/status` says of the daemon: this machine, its ports, whether avahi-daemon
/// advertises it (followed from the receiver's events), what it receives into and by which
/// policy, and its outbox. Any thread.
final class DaemonStatus: Sendable {
  private let daemon: Daemon
  private let settings: ReceiveSettings
  private let destination: String
  private let front: DaemonFrontEnds
  private let advertised = Mutex(false)

  init(daemon: Daemon, settings: ReceiveSettings, destination: String, front: DaemonFrontEnds) {
    (self.daemon, self.settings, self.destination, self.front) = (
      daemon, settings, destination, front
    )
  }

  /// Follows what the receiver says of its advertisement.
  func observe(_ event: ReceiverEvent) {
    switch event {
    case .advertising(_, let discoverable): advertised.withLock { $0 = discoverable }
    case .advertisedLate: advertised.withLock { $0 = true }
    case .discoveryUnavailable, .discoveryInterrupted, .discoveryFailed:
      advertised.withLock { $0 = false }
    default: break
    }
  }

  /// The status now.
  var current: Components.Schemas.Status {
    let counts = daemon.outbox.counts
    let accept =
      Components.Schemas.Status.receivingPayload.acceptPayload(
        rawValue: daemon.accept.mode.rawValue)
      ?? .ask
    return Components.Schemas.Status(
      name: settings.name, pid: Int(getpid()), started: daemon.started,
      fingerprint: daemon.configuration.identity.fingerprint.hexString,
      version: FerryCommand.version,
      protocols: front.localSend == nil ? [.ferry] : [.ferry, .localsend],
      ports: .init(
        ferry: Int(front.advertiser.port), localsend: front.localSend.map { Int($0.server.port) },
        ui: daemon.uiPort),
      addresses: LocalAddresses.all(), advertised: advertised.withLock { $0 },
      receiving: .init(dir: destination, accept: accept),
      outbox: .init(queued: counts.queued, delivering: counts.delivering))
  }
}
