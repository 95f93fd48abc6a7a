import Ferry
import FerryLocalSend

extension InvitationPrompt {
  /// Reports a LocalSend sender's files or text (JSON `invitation`, `protocol` "localsend").
  func announce(
    localSend sender: LocalSendSender, status: KnownPeers.Status, offer: ResourceOffer?,
    text: Bool
  ) {
    output.emit(
      LocalSendAsked(
        peer: sender.peer.displayName, fingerprint: sender.peer.fingerprint.hexString,
        status: Self.status(status), protocol: sender.isBrowser ? "web" : "localsend",
        verified: sender.verified,
        deviceType: sender.device.deviceType, deviceModel: sender.device.deviceModel,
        address: sender.address, files: offer?.files.count, folders: offer?.folders.count,
        text: text, bytes: offer.map { Int($0.totalBytes) }))
  }

  /// Asks about a LocalSend sender's files: who (alias, device, fingerprint, "LocalSend",
  /// verified or not), what and how big. Silence until shortly before the offer's deadline
  /// declines it.
  func ask(localSend offer: ResourceOffer, from sender: LocalSendSender, status: KnownPeers.Status)
    async -> Answer
  {
    var lines = Self.heading(
      sender, status: status,
      wants: sender.isBrowser ? "wants to send (web page)" : "wants to send (LocalSend)")
    let overview = TreeOverview(offer.files.map(\.path))
    lines += Self.listing(
      count: offer.files.count, bytes: offer.totalBytes,
      names: offer.files.prefix(Self.shownNames).map(\.path), roots: overview.roots,
      hidden: overview.hidden, folders: offer.folders.count)
    return await ask(about: offer, lines)
  }

  /// Asks whether to show a LocalSend sender's text message.
  func ask(localSend text: LocalSendText, status: KnownPeers.Status) async -> Answer {
    let lines =
      Self.heading(text.sender, status: status, wants: "wants to show a text message (LocalSend)")
      + ["\(Quantity.bytes(UInt64(text.text.utf8.count))) of text"]
    return await question(
      lines, from: text.sender.peer.displayName,
      until: .now + ResourceOffer.decisionTimeout - .seconds(5), urgent: true,
      isPending: { text.isPending })
  }

  /// The question's first lines: a warning when the key changed or the name mimics a known
  /// one, then who asks — quoted and escaped — its device, address and whether its key is
  /// proven.
  private static func heading(
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
