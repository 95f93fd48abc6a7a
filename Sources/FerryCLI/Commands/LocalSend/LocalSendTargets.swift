import Ferry
import FerryAgent
import FerryLocalSend
import Foundation
import Synchronization

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

  /// The least time a look for devices lasts before it says nobody answered: devices answer
  /// this machine's announcements (sent at once, 0.5 and 2 s later) within a second or two,
  /// and apps that announce now and then do so every few seconds.
  static let listenAtLeast: Duration = .seconds(6)
  /// How long, after the first device named is heard, others are listened for: another device
  /// answering to the same name (one pretending to be it, or two phones called the same) is
  /// an ambiguity, whichever answered first.
  static let settle: Duration = .milliseconds(2500)

  /// Finds the device `wanted` (nil: the only one heard), by multicast, until `deadline`; its
  /// addresses are tried in turn (``LocalSendSightings/ordered(_:)``) with its certificate
  /// pinned to the key it announced, and the first that proves it is used.
  ///
  /// - Throws: ``CLIFailure``: none found (exit 3), several with no `--to` (exit 3), several
  ///   keys answering to `wanted` (exit 5, unless a terminal chooses), none of its addresses
  ///   proving its key (exit 3), or no interface to look on (exit 6).
  func discover(
    _ wanted: String?, as reference: PeerReference? = nil,
    until deadline: ContinuousClock.Instant, upload: LocalSendUpload
  ) async throws(CLIFailure) -> Found {
    let lookout = try await start()
    defer { lookout.stop() }
    output.note(
      wanted.map { "Looking for LocalSend device '\(printable($0))'…" }
        ?? "Looking for LocalSend devices…")
    let started = ContinuousClock.now
    let heard = await Self.collect(lookout.discovery, until: deadline) { sighting in
      wanted.map { Self.names(sighting.device, $0, reference) } ?? true
    } done: { firstMatch, now in
      Self.doneListening(since: started, firstMatch: firstMatch, now: now, named: wanted != nil)
    }
    let candidates = heard.filter { sighting in
      wanted.map { Self.names(sighting.device, $0, reference) } ?? true
    }
    return try await pick(
      candidates, heard: heard, wanted: wanted, reference: reference, upload: upload,
      listened: ContinuousClock.now - started)
  }

  /// Whether a look that began at `started` has heard enough at `now`: ``settle`` after the
  /// first device it looks for (`firstMatch`), and never before this machine's announcements
  /// were answered (3 s); with nothing found and no name given (`named`), after
  /// ``listenAtLeast`` — a name is looked for until the deadline.
  static func doneListening(
    since started: ContinuousClock.Instant, firstMatch: ContinuousClock.Instant?,
    now: ContinuousClock.Instant, named: Bool
  ) -> Bool {
    if let firstMatch {
      return now - firstMatch >= settle && now - started >= .seconds(3)
    }
    return !named && now - started >= listenAtLeast
  }

  /// A client to send with as this machine.
  ///
  /// - Throws: ``CLIFailure`` (exit 2, `identity`) when the identity cannot make a TLS context.
  func makeUpload() throws(CLIFailure) -> LocalSendUpload {
    do {
      return try LocalSendUpload(identity: identity, me: me)
    } catch {
      throw CLIFailure(status: .usage, message: "\(error)", code: .identity)
    }
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
  /// to: one key (several are an ambiguity), and of its addresses the first whose certificate
  /// proves that key.
  ///
  /// - Throws: ``CLIFailure``: none (exit 3), several without `--to` (exit 3), several keys
  ///   for `wanted` (exit 5, `ambiguous-peer`; a terminal is asked instead), a device that
  ///   announces plain HTTP or no usable fingerprint (exit 5), no address that answers as it
  ///   (exit 3).
  func pick(
    _ candidates: [LocalSendSighting], heard: [LocalSendSighting], wanted: String?,
    reference: PeerReference? = nil, upload: LocalSendUpload, listened: Duration? = nil
  ) async throws(CLIFailure) -> Found {
    let byKey = Dictionary(grouping: candidates) { LocalSendSightings.key($0.device.fingerprint) }
    guard !byKey.isEmpty else {
      let seen = Set(heard.map { "'\(printable($0.device.alias))'" }).sorted()
        .joined(separator: ", ")
      let within = listened.map { " within \(Int($0.inSeconds.rounded())) s" } ?? ""
      throw CLIFailure(
        status: .noPeer,
        message: (wanted.map { "no LocalSend device '\(printable($0))' answered" }
          ?? "no LocalSend device answered")
          + within + (seen.isEmpty ? "" : " (heard: \(seen))")
          + "; is LocalSend open on the device, on the same network? --address HOST:PORT "
          + "reaches one whose announcements do not get here",
        code: .noPeer)
    }
    var sightings = byKey.values.first!
    if byKey.count > 1 {
      let devices = byKey.values.map { LocalSendSightings.ordered($0)[0] }
        .sorted { $0.device.alias < $1.device.alias }
      guard let wanted else {
        throw CLIFailure(
          status: .noPeer,
          message: "several LocalSend devices answered: \(Self.list(devices)); choose one "
            + "with --to NAME or --to FINGERPRINT",
          code: .severalPeers)
      }
      // Two keys under one name: one of them may pretend to be the other. Never a guess.
      guard let chosen = await Self.choose(among: devices, wanted: wanted) else {
        throw CLIFailure(
          status: .authentication,
          message: "several LocalSend devices answer to '\(printable(wanted))' with different "
            + "keys: \(Self.list(devices)); one may be pretending to be another. Send with "
            + "--to and \(Fingerprint.minimumPrefixDigits) or more digits of the fingerprint "
            + "you mean (shown on the device, in LocalSend's settings)",
          code: .ambiguousPeer)
      }
      sightings = byKey[LocalSendSightings.key(chosen.device.fingerprint)] ?? [chosen]
    }
    let ordered = LocalSendSightings.ordered(sightings)
    let device = ordered[0].device
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
    // Each address in turn, the key pinned in the handshake: a claim replayed from another
    // address fails there, and the device that holds the key is found where it is.
    var reasons: [String] = []
    for sighting in ordered {
      let target = LocalSendTarget(
        host: sighting.address,
        port: sighting.device.port ?? Int(LocalSendProtocol.defaultPort), fingerprint: key,
        plainHTTP: false)
      do throws(LocalSendSendError) {
        _ = try await upload.info(of: target)
        return Found(target: target, device: sighting.device, pinned: pinned)
      } catch {
        reasons.append("\(target): \(printable("\(error)"))")
      }
    }
    throw CLIFailure(
      status: .noPeer,
      message: "'\(printable(device.alias))' was heard but answered as itself at none of its "
        + "addresses (\(reasons.joined(separator: "; ")))",
      code: .noPeer)
  }

  /// Devices as a list: each alias with the first 16 digits of its key and where it is.
  private static func list(_ devices: [LocalSendSighting]) -> String {
    devices.map {
      "'\(printable($0.device.alias))' [\(Self.shortKey($0.device.fingerprint))] at "
        + printable($0.address)
    }.joined(separator: ", ")
  }

  /// A device's fingerprint as Ferry shows keys (its first 16 digits, in groups), or what it
  /// claims, escaped, when that is no fingerprint (plain HTTP's random text).
  static func shortKey(_ fingerprint: String) -> String {
    (try? Fingerprint(parsing: fingerprint))?.shortDescription
      ?? printable(String(fingerprint.prefix(16)))
  }

  /// On a terminal, asks which of `devices` (several keys answering to `wanted`) is meant;
  /// nil in a script, or when the answer is not one of them.
  private static func choose(among devices: [LocalSendSighting], wanted: String) async
    -> LocalSendSighting?
  {
    guard isatty(STDIN_FILENO) == 1, isatty(STDERR_FILENO) == 1 else { return nil }
    var text =
      "Several LocalSend devices answer to '\(printable(wanted))' with different keys (one "
      + "may be pretending to be another):\n"
    for (index, device) in devices.enumerated() {
      text +=
        "  \(index + 1)) \(DisplayText.quoted(device.device.alias))  "
        + "[\(shortKey(device.device.fingerprint))]  \(printable(device.address))\n"
    }
    text += "Compare with the fingerprint in the device's LocalSend settings. Send to which? "
    text += "[1-\(devices.count)] "
    guard
      let answer = await TerminalInput.shared.nextLine(
        asking: { StandardStream.error.write(text) }, timeout: .seconds(60)),
      let number = Int(answer.trimmingCharacters(in: .whitespaces)),
      devices.indices.contains(number - 1)
    else { return nil }
    return devices[number - 1]
  }

  /// What is heard until `end`, or until `done` (given when the first sighting `named` says
  /// is one looked for came, and the time now) says it is enough; every sighting is kept in
  /// the book (``LocalSendSightings``), the ones named even when it is full.
  static func collect(
    _ discovery: LocalSendDiscovery, until end: ContinuousClock.Instant,
    named: @escaping @Sendable (LocalSendSighting) -> Bool,
    done: @escaping @Sendable (ContinuousClock.Instant?, ContinuousClock.Instant) -> Bool
  ) async -> [LocalSendSighting] {
    let book = Book()
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        for await sighting in discovery.sightings {
          let wanted = named(sighting)
          book.state.withLock { book in
            book.heard.note(sighting, wanted: wanted)
            if wanted, book.firstMatch == nil { book.firstMatch = .now }
          }
        }
      }
      group.addTask {
        while ContinuousClock.now < end {
          let first = book.state.withLock { $0.firstMatch }
          if done(first, .now) { break }
          try? await Task.sleep(for: .milliseconds(50))
        }
        discovery.stop()
      }
      await group.waitForAll()
    }
    return book.state.withLock { $0.heard.all }
  }

  /// What ``collect(_:until:named:done:)`` has heard, and when it first heard a device named.
  private final class Book: Sendable {
    let state = Mutex((heard: LocalSendSightings(), firstMatch: ContinuousClock.Instant?.none))
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
