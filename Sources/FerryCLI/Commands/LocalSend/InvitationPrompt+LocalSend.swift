import Ferry
import FerryAgent
import FerryLocalSend

extension InvitationPrompt {
  /// The question's first lines: a warning when the key changed or the name mimics a known
  /// one, then who asks — quoted and escaped — its device, address and whether its key is
  /// proven.
  static func heading(
    _ sender: LocalSendSender, status: KnownPeers.Status, wants: String
  ) -> [String] {
    var lines = [""]
    if sender.verified,
      let warning = warning(status, name: sender.peer.displayName, now: sender.peer.fingerprint)
    {
      lines += [warning, ""]
    }
    if sender.isBrowser {
      // Nothing about a browser is proven: where it is and what it says it is, escaped.
      lines.append("A browser at \(sender.address) \(wants)")
      lines.append(
        "  \(BrowserName.of(sender.device.deviceModel).map { printable($0) } ?? "no User-Agent")"
          + " (as it says of itself)")
      lines.append(
        "  plain HTTP: anyone on this network could read or change what it sends")
      return lines
    }
    var device: [String] = []
    // Each escaped on its own: a newline in what a device says would forge a line.
    if let model = sender.device.deviceModel, !model.isEmpty { device.append(printable(model)) }
    if let type = sender.device.deviceType, !type.isEmpty { device.append(printable(type)) }
    let what = device.isEmpty ? "" : ", " + device.joined(separator: ", ")
    if sender.verified {
      lines.append("\(who(sender.peer, status: status)) \(wants)")
      lines.append("  LocalSend\(what), at \(sender.address); its certificate proves this key")
    } else {
      lines.append(
        "\(DisplayText.quoted(sender.peer.displayName)) (UNVERIFIED: no certificate) \(wants)")
      lines.append(
        "  LocalSend\(what), at \(sender.address); it claims key "
          + "\(printable(String(sender.device.fingerprint.prefix(16)))) but proved nothing "
          + "(--localsend-unverified)")
    }
    return lines
  }
}
