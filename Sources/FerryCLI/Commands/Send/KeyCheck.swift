import Ferry
import Foundation

/// The sender's side of "a trusted name with another key is never silent": before files go to a
/// receiver whose name is pinned to a different fingerprint (a trusted peer's name, or one
/// that looks like it), `ferry send` warns loudly; on a terminal the user decides, in a script
/// it refuses (exit 5) — unless `--to` named the new key by its fingerprint. Receivers that
/// accept are remembered (trust on first use) by their key: two machines that share a name are
/// two known peers, not a changed key.
struct KeyCheck: Sendable {
  let knownPeers: KnownPeers
  let output: EventWriter
  let bar: ProgressBar
  /// Whether a person can be asked (stdin and stderr are terminals).
  let interactive: Bool

  /// nil to go on; the failure to report when `peer`'s name is pinned to another key and
  /// nobody confirmed sending to it. `pinned`: the user named this fingerprint (`--to 9F2C41AB`).
  func confirm(_ peer: PeerID, pinned: Bool, timeout: Duration) async -> CLIFailure? {
    guard !pinned, let status = try? knownPeers.status(of: peer),
      let warning = InvitationPrompt.warning(
        status, name: peer.displayName, now: peer.fingerprint)
    else { return nil }
    let previous: Fingerprint
    switch status {
    case .changedKey(let key), .similarName(_, let key): previous = key
    case .known, .new: return nil
    }
    let name = printable(peer.displayName)
    output.emit(
      KeyChanged(
        peer: peer.displayName, fingerprint: peer.fingerprint.hexString,
        previous: previous.hexString))
    bar.above { output.note(warning) }
    if interactive {
      let answer = await TerminalInput.shared.nextLine(
        asking: { bar.above { StandardStream.error.write("Send to it anyway? [y/N] ") } },
        timeout: timeout)
      if TerminalInput.isYes(answer) {
        return nil
      }
    }
    let newPrefix = String(peer.fingerprint.hexString.prefix(Fingerprint.minimumPrefixDigits))
    let oldPrefix = String(previous.hexString.prefix(Fingerprint.minimumPrefixDigits))
    return CLIFailure(
      status: .authentication,
      message: "nothing sent to '\(name)': that name is trusted with another key "
        + "(\(previous.shortDescription)). Check that 'ferry identity' on it shows "
        + "\(peer.fingerprint.shortDescription); then send with --to \(newPrefix). If it "
        + "replaced the trusted machine (reinstalled), also run 'ferry forget \(oldPrefix)' and "
        + "'ferry trust \(newPrefix) --name NAME'",
      code: .keyChanged)
  }

  /// Remembers a receiver that accepted (name and key), for the next check.
  func remember(_ peer: PeerID) {
    try? knownPeers.recordSeen(peer)
  }
}
