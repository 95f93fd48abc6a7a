import Ferry
import FerryAgent
import Foundation

/// Finds the receivers a `ferry send` goes to, among those a ``Browser`` sees.
struct ReceiverFinder: Sendable {
  let browser: Browser
  let deadline: ContinuousClock.Instant
  /// Told once, ``hintAfter`` into a look that has found nobody yet, what is being waited
  /// for (nil: nothing is said).
  var stillLooking: (@Sendable (_ wanted: String?) -> Void)? = nil

  /// How long a look finds nobody before it says what it waits for and what to try.
  static let hintAfter: Duration = .seconds(5)

  /// The Ferry peers among `peers`, one per key: a receiver listed in several domains (on the
  /// local network and in a DNS-SD domain) is one receiver, its local listing first.
  static func onePerKey(_ peers: [DiscoveredPeer]) -> [DiscoveredPeer] {
    var seen: Set<Fingerprint> = []
    let ordered = peers.enumerated().sorted { left, right in
      (left.element.domain == "local" ? 0 : 1, left.offset)
        < (right.element.domain == "local" ? 0 : 1, right.offset)
    }
    return ordered.map(\.element).filter { peer in
      guard peer.peerID != nil, let key = peer.info.fingerprint else { return false }
      return seen.insert(key).inserted
    }
  }

  /// What a look that has found nobody yet says, `wanted` the `--to` text (nil: anyone).
  static func waitingWords(_ wanted: String?) -> String {
    let whom = wanted.map { "'\(DisplayText.escaping($0))'" } ?? "a receiver"
    return "Still looking for \(whom) among Ferry receivers on this network… Is 'ferry "
      + "receive' running on the other machine? A phone or another LocalSend app: add "
      + "--localsend. Another network: --address HOST:PORT (the receiver prints both)."
  }

  /// Says once (``stillLooking``) that nobody was found yet, ``hintAfter`` after `started`.
  private func hint(
    _ wanted: String?, since started: ContinuousClock.Instant, said: inout Bool
  ) {
    guard !said, ContinuousClock.now - started >= Self.hintAfter else { return }
    said = true
    stillLooking?(wanted)
  }

  /// The least a choice among receivers waits after the first one is seen: others answering
  /// the same query arrive within a few hundred milliseconds.
  static let settleAtLeast: Duration = .milliseconds(700)
  /// The most it waits for the browse to settle (``Browser/hasSettled``) after the first
  /// receiver is seen: an instance Avahi cannot resolve is given up on within about 5 s.
  static let settleAtMost: Duration = .seconds(10)

  /// Whether, with the first receiver seen at `firstSeen`, the receivers found so far are all
  /// there are to decide among: ``settleAtLeast`` has passed and the browse settled (a second
  /// receiver still resolving on a busy machine is not missed), or ``settleAtMost`` has, or
  /// the deadline.
  private func settled(since firstSeen: ContinuousClock.Instant) -> Bool {
    let waited = ContinuousClock.now - firstSeen
    return (waited >= Self.settleAtLeast && browser.hasSettled) || waited >= Self.settleAtMost
      || ContinuousClock.now >= deadline
  }

  /// The one receiver `reference` (the `--to` value `wanted`) names, as soon as it is seen:
  /// matched by fingerprint first (a nickname's keys included), by display name otherwise.
  /// `pinned` is true when it was matched by its key (the user's consent to that key).
  ///
  /// - Throws: ``CLIFailure``: `.noPeer` when none appears before the deadline; `.usage` when a
  ///   fingerprint prefix or a name matches several receivers; `.authentication` when the value
  ///   names one receiver by fingerprint and another by name (on a terminal, `ask` lets the user
  ///   choose instead).
  func find(_ wanted: String, as reference: PeerReference, ask: Bool) async throws(CLIFailure)
    -> (peer: DiscoveredPeer, pinned: Bool)
  {
    var firstSeen: ContinuousClock.Instant?
    let started = ContinuousClock.now
    var hinted = false
    while true {
      let peers = Self.onePerKey(browser.peers)
      let byKey = peers.filter { reference.matchesFingerprint($0.info.fingerprint!) }
      let byName = peers.filter { reference.matchesName($0.name) }
      let others = byName.filter { !byKey.contains($0) }
      if !byKey.isEmpty && !others.isEmpty {
        let both = byKey + others
        guard ask else {
          throw CLIFailure(
            status: .authentication,
            message: "'\(DisplayText.escaping(wanted))' names one receiver by its fingerprint "
              + "and another by its name; send with --to and \(Fingerprint.minimumPrefixDigits) "
              + "or more digits of the fingerprint you mean:\n" + Self.list(both),
            code: .ambiguousPeer)
        }
        StandardStream.error.write(
          "'\(DisplayText.escaping(wanted))' names more than one receiver (by fingerprint and "
            + "by name).\n")
        let chosen = try await prompt(both, single: true)[0]
        return (chosen, byKey.contains(chosen))
      }
      if byKey.count == 1 {
        // A text that stands for known keys and for a name too: the receiver with the key is
        // taken once the browse settles, so that one advertising the name is seen as well
        // whichever answered first (the two are then an ambiguity, above).
        let seen = firstSeen ?? .now
        firstSeen = seen
        if !reference.alsoNamesKnownKeys || settled(since: seen) { return (byKey[0], true) }
      } else if byKey.count > 1 || byName.count > 1 {
        throw CLIFailure(
          status: .usage,
          message: "'\(DisplayText.escaping(wanted))' matches several receivers; give more of "
            + "the fingerprint:\n" + Self.list(byKey.count > 1 ? byKey : byName),
          code: .ambiguousPeer)
      } else if byName.count == 1 {
        // A name that also stands for known keys (a trusted peer's short prefix or nickname):
        // give that peer a moment to appear too, so that an ambiguity is not decided by who
        // answered first.
        guard reference.alsoNamesKnownKeys,
          !reference.matchesFingerprint(byName[0].info.fingerprint!)
        else {
          return (byName[0], false)
        }
        let seen = firstSeen ?? .now
        firstSeen = seen
        if settled(since: seen) { return (byName[0], false) }
      }
      if firstSeen == nil { hint(wanted, since: started, said: &hinted) }
      // Found elsewhere (at a remembered address): this look ends.
      if Task.isCancelled {
        throw CLIFailure(status: .noPeer, message: "no longer looked for", code: .noPeer)
      }
      guard ContinuousClock.now < deadline else {
        let message =
          "no receiver '\(DisplayText.escaping(wanted))' found among Ferry receivers on this "
          + "network" + Self.serviceWords(browser.serviceType)
        throw CLIFailure(
          status: .noPeer,
          message: peers.isEmpty
            ? message + "; " + Self.nobodyHint
            : message + "; found instead (use --to with one of these names or fingerprints):\n"
              + Self.list(peers),
          code: .noPeer)
      }
      try? await Task.sleep(for: .milliseconds(50))
    }
  }

  /// Without `--to`: waits for the first receiver and a moment for others; one is used, several
  /// are offered as a numbered choice when `ask` is true (a terminal), and are an error
  /// otherwise.
  ///
  /// - Throws: ``CLIFailure``: `.noPeer` when none is found before the deadline or several are
  ///   found in a script (the message lists them); `.usage` for an answer that is not a choice.
  /// The service type in words, when it is not Ferry's own (a user who chose one knows it).
  static func serviceWords(_ type: ServiceType) -> String {
    type == .ferry ? "" : " (service type '\(type.name)')"
  }

  /// What to check when nobody was found.
  static let nobodyHint =
    "is 'ferry receive' running on the other machine, on the same network (and service type)? "
    + "'ferry browse' lists who can be seen; a phone or another LocalSend app: add --localsend; "
    + "without discovery, send with --address HOST:PORT (the receiver prints its addresses and "
    + "port)"

  func choose(ask: Bool) async throws(CLIFailure) -> [DiscoveredPeer] {
    var firstSeen: ContinuousClock.Instant?
    let started = ContinuousClock.now
    var hinted = false
    while true {
      let found = Self.onePerKey(browser.peers).sorted { $0.name < $1.name }
      if !found.isEmpty && firstSeen == nil { firstSeen = .now }
      if found.isEmpty { hint(nil, since: started, said: &hinted) }
      if firstSeen.map(settled(since:)) ?? false || ContinuousClock.now >= deadline {
        switch found.count {
        case 0:
          throw CLIFailure(
            status: .noPeer,
            message: "no receiver found among Ferry receivers on this network"
              + Self.serviceWords(browser.serviceType) + "; " + Self.nobodyHint,
            code: .noPeer)
        case 1:
          return found
        default:
          guard ask else {
            throw CLIFailure(
              status: .noPeer,
              message: "several receivers found; choose with --to NAME (repeatable):\n"
                + Self.list(found),
              code: .severalPeers)
          }
          return try await prompt(found, single: false)
        }
      }
      try? await Task.sleep(for: .milliseconds(50))
    }
  }

  /// Asks which of `found` to send to: numbers separated by spaces or commas, or `all` (with
  /// `single`, one number).
  private func prompt(_ found: [DiscoveredPeer], single: Bool) async throws(CLIFailure)
    -> [DiscoveredPeer]
  {
    var text = "Several receivers are nearby:\n"
    for (index, peer) in found.enumerated() {
      text +=
        "  \(index + 1)) \(DisplayText.quoted(peer.name))  "
        + "[\(peer.info.fingerprint!.shortDescription)]\n"
    }
    text +=
      single
      ? "Send to which? [1-\(found.count)] "
      : "Send to which? [1-\(found.count), several separated by spaces, or 'all'] "
    let waited = max(.seconds(1), deadline - .now)
    guard
      let answer = await TerminalInput.shared.nextLine(
        asking: { StandardStream.error.write(text) }, timeout: waited)
    else {
      StandardStream.error.write("\n")
      throw CLIFailure(status: .noPeer, message: "no receiver chosen", code: .noPeer)
    }
    let words = answer.split { $0 == " " || $0 == "," }.map { $0.lowercased() }
    if !single && (words == ["all"] || words == ["a"]) { return found }
    if single && words.count > 1 {
      throw CLIFailure(status: .usage, message: "choose one receiver", code: .invalidChoice)
    }
    var chosen: [DiscoveredPeer] = []
    for word in words {
      guard let number = Int(word), (1...found.count).contains(number) else {
        throw CLIFailure(
          status: .usage,
          message: "'\(DisplayText.escaping(String(word)))' is not one of 1-\(found.count)",
          code: .invalidChoice)
      }
      if !chosen.contains(found[number - 1]) { chosen.append(found[number - 1]) }
    }
    guard !chosen.isEmpty else {
      throw CLIFailure(status: .noPeer, message: "no receiver chosen", code: .noPeer)
    }
    return chosen
  }

  private static func list(_ peers: [DiscoveredPeer]) -> String {
    peers.map { "  \(DisplayText.quoted($0.name))  [\($0.info.fingerprint!.shortDescription)]" }
      .joined(separator: "\n")
  }
}
