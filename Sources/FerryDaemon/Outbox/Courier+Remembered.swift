import Ferry
import Foundation

/// The outbox beyond one subnet: a receiver mDNS does not see is tried where it was reached
/// before (``KnownPeers/Entry/addresses``), as `ferry send --to` does — its key pinned in the
/// handshake, so an address another machine took over delivers nothing.
extension Courier {
  /// How often the remembered addresses of receivers with sends due, and not in sight, are
  /// tried (a TCP connection, ``answerTimeout`` each).
  static let rememberedInterval: Duration = .seconds(30)
  /// How long a remembered address has to answer.
  static let answerTimeout: Duration = .seconds(3)

  /// 5 s after the start, then every ``rememberedInterval`` until the task is cancelled: for
  /// each receiver with a Ferry
  /// send due that mDNS does not see, its remembered addresses; the first that answers is its
  /// route, and its sends are delivered there.
  func probeRemembered() async {
    // A first look soon after the start (mDNS has had its moment), then every interval.
    var wait: Duration = .seconds(5)
    while !Task.isCancelled {
      try? await Task.sleep(for: wait)
      wait = Self.rememberedInterval
      let due = outbox.dueFingerprints().filter {
        !outbox.due(for: $0, carrier: .ferry).isEmpty && peer($0) == nil
      }
      guard !due.isEmpty else { continue }
      let known = (try? configuration.knownPeers.all()) ?? []
      for fingerprint in due {
        let addresses = (known.first { $0.fingerprint == fingerprint }?.addresses ?? [])
          .compactMap(HostPort.init)
        guard !addresses.isEmpty else { continue }
        let answered = await TCPAnswers.answering(
          addresses.map { (host: $0.host, port: Int($0.port)) }, within: Self.answerTimeout)
        guard let first = answered.first else {
          forgetRoute(fingerprint)
          continue
        }
        routes.withLock { $0[fingerprint] = addresses[first] }
        start(fingerprint, carrier: .ferry)
      }
    }
  }

  /// The address the receiver `fingerprint` answered at lately, when mDNS does not see it.
  func route(_ fingerprint: String) -> HostPort? {
    routes.withLock { $0[fingerprint] }
  }

  /// No longer tries the receiver `fingerprint` at its route (it did not answer, or another
  /// key did).
  func forgetRoute(_ fingerprint: String) {
    routes.withLock { _ = $0.removeValue(forKey: fingerprint) }
  }
}
