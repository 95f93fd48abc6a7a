import Ferry
import FerryAPI
import FerryAgent
import Foundation

/// What the API does with sends: queues them (the receiver resolved to a key, the paths walked,
/// the entry written to the outbox before the answer), lists them, cancels them. Any thread.
package struct DaemonSends: Sendable {
  /// The peers around now that a name may name: their name, key and how they are reached.
  package struct Around: Sendable {
    package let name: String
    package let fingerprint: Fingerprint
    package let carrier: OutboxEntry.Carrier

    /// A peer around.
    package init(name: String, fingerprint: Fingerprint, carrier: OutboxEntry.Carrier) {
      (self.name, self.fingerprint, self.carrier) = (name, fingerprint, carrier)
    }
  }

  let outbox: Outbox
  let courier: Courier
  let knownPeers: KnownPeers
  /// The peers around now.
  let around: @Sendable () -> [Around]
  /// How long a queued send waits for its peer by default.
  let defaultExpiry: TimeInterval
  /// Whether this daemon hears LocalSend devices' announcements (`localsend = true`): without
  /// them, a send to one could never go.
  let hearsLocalSend: Bool

  /// Sends through `outbox` and `courier`; names resolved among `around` and `knownPeers`.
  package init(
    outbox: Outbox, courier: Courier, knownPeers: KnownPeers,
    around: @escaping @Sendable () -> [Around], defaultExpiry: TimeInterval,
    hearsLocalSend: Bool
  ) {
    (self.outbox, self.courier, self.knownPeers, self.around, self.defaultExpiry) = (
      outbox, courier, knownPeers, around, defaultExpiry
    )
    self.hearsLocalSend = hearsLocalSend
  }

  /// Queues `request` (written to the outbox before it returns), and delivers it at once if
  /// its peer is in sight.
  ///
  /// - Throws: ``APIProblem``: an unknown or ambiguous receiver, paths that cannot be sent, a
  ///   full outbox.
  package func queue(_ request: Components.Schemas.SendRequest) async throws(APIProblem)
    -> OutboxEntry
  {
    let requested = request._protocol.map { OutboxEntry.Carrier(rawValue: $0.rawValue)! }
    if let seconds = request.expiresIn, !(60...31_536_000).contains(seconds) {
      throw APIProblem.badRequest("expiresIn is 60 to 31536000 seconds")
    }
    guard request.to.utf8.count <= 256 else { throw APIProblem.badRequest("to is too long") }
    let target = try resolve(request.to, carrier: requested)
    guard target.carrier == .ferry || hearsLocalSend else {
      throw APIProblem(
        409, "no-localsend",
        "this daemon does not hear LocalSend devices, so a send to one would never go: set "
          + "localsend = true in the config's [receive] table and restart it")
    }
    let when: OutboxEntry.When = request.when == .now ? .now : .seen
    // The disk is walked off the daemon's tasks (a slow mount would hold them).
    let paths = request.paths
    let files = try await OutboxFiles.offThread { () throws(APIProblem) in
      try OutboxFiles.snapshot(paths)
    }
    let now = Date()
    let expires =
      when == .now
      ? now.addingTimeInterval(Double(Outbox.nowWindow.components.seconds))
      : now.addingTimeInterval(request.expiresIn.map(Double.init) ?? defaultExpiry)
    let entry = OutboxEntry(
      id: DaemonID.new(), to: request.to, fingerprint: target.key.hexString,
      byKey: target.byKey, carrier: target.carrier, paths: request.paths, when: when,
      created: now, expires: expires, files: files)
    try outbox.add(entry)
    courier.poke()
    return entry
  }

  /// Every send kept, newest first.
  package func list() -> [OutboxEntry] { outbox.all }

  /// Send `id`, if kept.
  package func entry(_ id: String) -> OutboxEntry? { outbox.entry(id) }

  /// Cancels send `id` (``Courier/cancel(_:)``).
  package func cancel(_ id: String) async -> OutboxEntry? { await courier.cancel(id) }

  /// What a send's `to` resolved to.
  struct Target {
    let key: Fingerprint
    let carrier: OutboxEntry.Carrier
    /// Whether `to` named the key itself (digits, or a trusted peer's name).
    let byKey: Bool
  }

  /// The key (and how to reach it) that `text` names: a fingerprint, a prefix of one known or
  /// around, a trusted peer's name, or the name of a peer around now (its key is queued —
  /// unless that peer's name is a trusted peer's with another key, or looks like one).
  ///
  /// - Throws: ``APIProblem``: nothing named, several keys, or a look-alike.
  func resolve(_ text: String, carrier requested: OutboxEntry.Carrier?) throws(APIProblem)
    -> Target
  {
    let reference: PeerReference
    do {
      reference = try PeerReference(text, knownPeers: knownPeers).nickname(in: knownPeers)
    } catch {
      throw APIProblem(
        400, error.kind == .ambiguous ? "ambiguous-peer" : "unknown-peer", error.message)
    }
    let around = self.around().filter { requested == nil || $0.carrier == requested }
    var keys: [Fingerprint]
    var byKey = true
    switch reference {
    case .fingerprint(let key):
      keys = [key]
    case .nickname(_, let trusted):
      keys = trusted
    case .name(_, let known?):
      keys = [known]
    case .prefix, .name(_, nil):
      let matching = around.filter {
        reference.matchesFingerprint($0.fingerprint) || reference.matchesName($0.name)
      }
      keys = matching.map(\.fingerprint)
      if case .name = reference {
        byKey = false
        // A name announced around is no proof: one that is a trusted peer's with another
        // key, or looks like one, is refused here, as ferry send refuses it in a script.
        for peer in matching {
          guard let id = try? PeerID(displayName: peer.name, fingerprint: peer.fingerprint),
            let status = try? knownPeers.status(of: id)
          else { continue }
          switch status {
          case .changedKey, .similarName:
            throw APIProblem(
              409, "key-changed",
              "'\(DisplayText.escaping(peer.name))' around now is not the trusted peer its name "
                + "says (its key is \(peer.fingerprint.shortDescription)): queue by fingerprint "
                + "if it is the one you mean")
          case .known, .new:
            break
          }
        }
      }
    }
    keys = Array(Set(keys))
    let shown = DisplayText.escaping(text)
    guard keys.count == 1, let key = keys.first else {
      if keys.isEmpty {
        throw APIProblem(
          404, "unknown-peer",
          "no peer around now or trusted is '\(shown)': give its fingerprint (ferry identity on "
            + "it shows it), or trust it first (ferry trust FINGERPRINT --name NAME)")
      }
      throw APIProblem(
        409, "ambiguous-peer",
        "'\(shown)' names \(keys.count) keys: give the fingerprint you mean")
    }
    let carriers = Set(self.around().filter { $0.fingerprint == key }.map(\.carrier))
    let carrier = requested ?? (carriers == [.localsend] ? .localsend : .ferry)
    return Target(key: key, carrier: carrier, byKey: byKey)
  }
}

extension OutboxEntry {
  /// As the API shows it (its files only when asked).
  package func api(withFiles: Bool) -> Components.Schemas.Send {
    var error: Components.Schemas.Send.errorPayload?
    switch state {
    case .failed(_, let problem): error = .init(code: problem.code, message: problem.message)
    case .expired: error = .init(code: "expired", message: "\(to) was not seen before \(expires)")
    case .cancelled: error = .init(code: "cancelled", message: "cancelled")
    default: break
    }
    return Components.Schemas.Send(
      id: id, to: to, fingerprint: fingerprint,
      _protocol: carrier == .ferry ? .ferry : .localsend, paths: paths,
      when: when == .now ? .now : .seen, state: .init(rawValue: state.word) ?? .queued,
      created: created, expires: expires, attempts: attempts, bytes: Int(clamping: bytes),
      total: Int(clamping: total), fileCount: files.count,
      files: withFiles
        ? files.map {
          .init(path: $0.path, status: .init(rawValue: $0.status.rawValue) ?? .pending)
        } : nil,
      error: error)
  }
}
