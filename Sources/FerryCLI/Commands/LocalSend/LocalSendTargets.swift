import Ferry
import FerryLocalSend
import Foundation

/// How `ferry send --localsend` finds its receiver: by address (`--address HOST:PORT`), or by
/// LocalSend's multicast discovery, by alias or fingerprint (`--to`), or the only device heard.
struct LocalSendTargets: Sendable {
  let identity: Identity
  let me: LocalSendDevice
  let output: EventWriter

  /// A device found, and the key its certificate must have.
  struct Found: Sendable {
    let target: LocalSendTarget
    let device: LocalSendDevice
    /// Whether the user named its key (`--to` a fingerprint).
    let pinned: Bool
  }

  /// Finds the device `wanted` (nil: the only one heard), by multicast, until `deadline`.
  ///
  /// - Throws: ``CLIFailure``: none found (exit 3), several with no `--to` (exit 3), or no
  ///   interface to look on (exit 6).
  func discover(
    _ wanted: String?, as reference: PeerReference? = nil,
    until deadline: ContinuousClock.Instant
  ) async throws(CLIFailure) -> Found {
    let lookout = try await start()
    defer { lookout.stop() }
    output.note(
      wanted.map { "Looking for LocalSend device '\(printable($0))'…" }
        ?? "Looking for LocalSend devices…")
    // No --to: whoever answers within a short listen (the announcements go at once, 0.5 and
    // 2 s); with --to, until the deadline.
    let listenEnd = wanted == nil ? min(deadline, .now + .seconds(3)) : deadline
    let heard = await Self.collect(lookout.discovery, until: listenEnd) { sighting in
      guard let wanted else { return false }
      return Self.names(sighting.device, wanted, reference)
    }
    let candidates = heard.filter { sighting in
      wanted.map { Self.names(sighting.device, $0, reference) } ?? true
    }
    return try pick(candidates, heard: heard, wanted: wanted, reference: reference)
  }

  /// LocalSend's discovery, started: this machine announces itself so that devices answer,
  /// with a server their `register` answers reach.
  ///
  /// - Throws: ``CLIFailure`` (`discovery-unavailable`, exit 6) when no interface has multicast.
  func start() async throws(CLIFailure) -> LocalSendLookout {
    do {
      return try await LocalSendLookout.start(identity: identity, alias: me.alias)
    } catch {
      throw CLIFailure(
        status: error.status, message: error.message + "; use --address HOST:PORT",
        code: error.code)
    }
  }

  /// The one of `candidates` (the devices `wanted` names among all `heard`; nil: any) to send
  /// to, with the key its certificate must have.
  ///
  /// - Throws: ``CLIFailure``: none (exit 3), several (exit 3), a device that announces plain
  ///   HTTP or no usable fingerprint (exit 5).
  func pick(
    _ candidates: [LocalSendSighting], heard: [LocalSendSighting], wanted: String?,
    reference: PeerReference? = nil
  ) throws(CLIFailure) -> Found {
    guard let first = candidates.first else {
      let seen = heard.map { "'\(printable($0.device.alias))'" }.joined(separator: ", ")
      throw CLIFailure(
        status: .noPeer,
        message: (wanted.map { "no LocalSend device '\(printable($0))' answered" }
          ?? "no LocalSend device answered")
          + (seen.isEmpty ? "" : " (heard: \(seen))"),
        code: .noPeer)
    }
    guard candidates.count == 1 else {
      let names = candidates.map {
        "'\(printable($0.device.alias))' [\(printable(String($0.device.fingerprint.prefix(16))))]"
      }
      throw CLIFailure(
        status: .noPeer,
        message: "several LocalSend devices answered: \(names.joined(separator: ", ")); "
          + "choose one with --to NAME or --to FINGERPRINT",
        code: .severalPeers)
    }
    let device = first.device
    guard device.usesTLS else {
      // Plain HTTP proves nothing: anyone can announce a device's fingerprint with it.
      throw CLIFailure(
        status: .authentication,
        message: "'\(printable(device.alias))' announces plain HTTP (LocalSend's encryption "
          + "off): nothing would prove it is that device, and anyone on the network could "
          + "read the files. Turn encryption on in its settings",
        code: .authentication)
    }
    guard let key = try? Fingerprint(parsing: device.fingerprint) else {
      throw CLIFailure(
        status: .authentication,
        message: "'\(printable(device.alias))' announced no usable fingerprint",
        code: .authentication)
    }
    // Named by its key — digits of it, or a trusted name that stands for it — rather than
    // by the alias it gives: the user's consent to that key.
    let pinned =
      wanted.map {
        device.alias != $0
          && (($0.filter { !$0.isWhitespace }.count >= Fingerprint.minimumPrefixDigits
            && Self.matches(device, $0)) || (reference?.matchesFingerprint(key) ?? false))
      } ?? false
    return Found(
      target: LocalSendTarget(
        host: first.address, port: device.port ?? Int(LocalSendProtocol.defaultPort),
        fingerprint: key, plainHTTP: false),
      device: device, pinned: pinned)
  }

  /// What is heard until `end`, or until `done` says a sighting is the one.
  static func collect(
    _ discovery: LocalSendDiscovery, until end: ContinuousClock.Instant,
    done: @escaping @Sendable (LocalSendSighting) -> Bool
  ) async -> [LocalSendSighting] {
    await withTaskGroup(of: [LocalSendSighting]?.self) { group in
      group.addTask {
        var heard = LocalSendSightings()
        for await sighting in discovery.sightings {
          let found = done(sighting)
          heard.note(sighting, wanted: found)
          if found { break }
        }
        return heard.all
      }
      group.addTask {
        try? await Task.sleep(until: end)
        discovery.stop()
        return nil
      }
      var result: [LocalSendSighting] = []
      for await value in group {
        if let value {
          result = value
          group.cancelAll()
        }
      }
      return result
    }
  }

  /// Whether `device` is the one `wanted` names: as ``matches(_:_:)`` says, or by a key a
  /// trusted name (`reference`) stands for.
  static func names(
    _ device: LocalSendDevice, _ wanted: String, _ reference: PeerReference?
  ) -> Bool {
    if matches(device, wanted) { return true }
    guard let reference, let key = try? Fingerprint(parsing: device.fingerprint) else {
      return false
    }
    return reference.matchesFingerprint(key)
  }

  /// Whether `device` is the one `wanted` names: its alias exactly, or its fingerprint's
  /// first digits (at least 16, as for Ferry peers: fewer can be matched by a made key).
  static func matches(_ device: LocalSendDevice, _ wanted: String) -> Bool {
    if device.alias == wanted { return true }
    let digits = wanted.uppercased().filter { !$0.isWhitespace }
    return digits.count >= Fingerprint.minimumPrefixDigits
      && device.fingerprint.uppercased().hasPrefix(digits)
  }

  /// The device at `address`, asked who it is; its key is the certificate it presents (or
  /// the fingerprint `wanted` names, when given, required in the handshake).
  ///
  /// - Throws: ``CLIFailure`` when it cannot be reached (exit 3) or is not the key named (5).
  func ask(address: String, wanted: String?, upload: LocalSendUpload, plainHTTP: Bool)
    async throws(CLIFailure) -> Found
  {
    let (host, port) = try parseAddress(address)
    let named = wanted.flatMap { try? Fingerprint(parsing: $0) }
    var target = LocalSendTarget(
      host: host, port: Int(port), fingerprint: named, plainHTTP: plainHTTP)
    let info: (device: LocalSendDevice, presented: Fingerprint?)
    do throws(LocalSendSendError) {
      info = try await upload.info(of: target)
    } catch {
      throw CLIFailure(
        status: named == nil ? .noPeer : .authentication,
        message: "LocalSend device at \(address): \(printable("\(error)"))",
        code: named == nil ? .noPeer : .authentication)
    }
    // A fingerprint (prefix) must be the certificate's; a name, the alias it gives.
    let isKey = (Fingerprint.prefixLength(of: wanted ?? "") ?? 0) > 0
    let presentedMatches =
      info.presented.map { key in
        wanted.map { key.hexString.hasPrefix($0.uppercased().filter { !$0.isWhitespace }) }
          ?? false
      } ?? false
    if let wanted, named == nil, isKey ? !presentedMatches : info.device.alias != wanted {
      throw CLIFailure(
        status: .authentication,
        message: "the LocalSend device at \(address) is '\(printable(info.device.alias))', "
          + "not '\(printable(wanted))'",
        code: .authentication)
    }
    target.fingerprint = info.presented
    return Found(target: target, device: info.device, pinned: named != nil)
  }
}
