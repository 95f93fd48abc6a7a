import Ferry
import Foundation

/// Finds the receivers a `ferry send` goes to, among those a ``Browser`` sees.
struct ReceiverFinder: Sendable {
  let browser: Browser
  let deadline: ContinuousClock.Instant

  /// The one receiver named `wanted`, or whose fingerprint starts with it, as soon as it is
  /// seen.
  ///
  /// - Throws: ``CLIFailure``: `.noPeer` when none appears before the deadline; `.usage` when a
  ///   fingerprint prefix matches several receivers.
  func find(_ wanted: String) async throws(CLIFailure) -> DiscoveredPeer {
    while true {
      let peers = browser.peers.filter { $0.peerID != nil }
      let named = peers.filter { $0.name == wanted }
      let matches =
        named.isEmpty ? peers.filter { $0.info.fingerprint?.hasPrefix(wanted) == true } : named
      if matches.count == 1 { return matches[0] }
      if matches.count > 1 {
        throw CLIFailure(
          status: .usage,
          message: "'\(wanted)' matches several receivers; give more of the fingerprint:\n"
            + Self.list(matches),
          code: "ambiguous-peer")
      }
      guard ContinuousClock.now < deadline else {
        throw CLIFailure(
          status: .noPeer, message: "no receiver '\(wanted)' found on \(browser.serviceType)",
          code: "no-peer")
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
  func choose(ask: Bool) async throws(CLIFailure) -> [DiscoveredPeer] {
    var firstSeen: ContinuousClock.Instant?
    while true {
      let found = browser.peers.filter { $0.peerID != nil }.sorted { $0.name < $1.name }
      if !found.isEmpty && firstSeen == nil { firstSeen = .now }
      // Others answering the same query arrive within a few hundred milliseconds.
      let settled = firstSeen.map { ContinuousClock.now - $0 >= .milliseconds(700) } ?? false
      if settled || ContinuousClock.now >= deadline {
        switch found.count {
        case 0:
          throw CLIFailure(
            status: .noPeer, message: "no receiver found on \(browser.serviceType)",
            code: "no-peer")
        case 1:
          return found
        default:
          guard ask else {
            throw CLIFailure(
              status: .noPeer,
              message: "several receivers found; choose with --to NAME (repeatable):\n"
                + Self.list(found),
              code: "several-peers")
          }
          return try await prompt(found)
        }
      }
      try? await Task.sleep(for: .milliseconds(50))
    }
  }

  /// Asks which of `found` to send to: numbers separated by spaces or commas, or `all`.
  private func prompt(_ found: [DiscoveredPeer]) async throws(CLIFailure) -> [DiscoveredPeer] {
    var text = "Several receivers are nearby:\n"
    for (index, peer) in found.enumerated() {
      text +=
        "  \(index + 1)) \(printable(peer.name))  [\(peer.info.fingerprint!.shortDescription)]\n"
    }
    text += "Send to which? [1-\(found.count), several separated by spaces, or 'all'] "
    StandardStream.error.write(text)
    let waited = max(.seconds(1), deadline - .now)
    guard let answer = await TerminalInput.shared.nextLine(timeout: waited) else {
      StandardStream.error.write("\n")
      throw CLIFailure(status: .noPeer, message: "no receiver chosen", code: "no-peer")
    }
    let words = answer.split { $0 == " " || $0 == "," }.map { $0.lowercased() }
    if words == ["all"] || words == ["a"] { return found }
    var chosen: [DiscoveredPeer] = []
    for word in words {
      guard let number = Int(word), (1...found.count).contains(number) else {
        throw CLIFailure(
          status: .usage, message: "'\(printable(String(word)))' is not one of 1-\(found.count)",
          code: "invalid-choice")
      }
      if !chosen.contains(found[number - 1]) { chosen.append(found[number - 1]) }
    }
    guard !chosen.isEmpty else {
      throw CLIFailure(status: .noPeer, message: "no receiver chosen", code: "no-peer")
    }
    return chosen
  }

  private static func list(_ peers: [DiscoveredPeer]) -> String {
    peers.map { "  \(printable($0.name))  [\($0.info.fingerprint!.shortDescription)]" }
      .joined(separator: "\n")
  }
}
