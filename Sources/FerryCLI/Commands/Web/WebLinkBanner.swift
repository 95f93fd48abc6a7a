/// The web link as people read it: what it is for, the risk of plain HTTP, how long it works,
/// each address's URL and — on a terminal — its QR code.
enum WebLinkBanner {
  /// Writes the banner to standard error (nothing with `--quiet`).
  static func show(_ urls: [String], minutes: Double, doing: String, output: EventWriter) {
    let lasts = minutes >= 1 ? "\(wholeNumber(minutes)) min" : "\(wholeNumber(minutes * 60)) s"
    output.note(
      "Web page: open this link on the other device, on the same network, to \(doing) (plain "
        + "HTTP: anyone on this network could read or change what is sent; the link works for "
        + "\(lasts)):")
    let drawn = StandardStream.error.isTerminal && !output.quiet
    for url in urls {
      output.note("  \(url)")
      guard drawn, let lines = TerminalQRCode.lines(for: url, colors: TerminalStyle.enabled)
      else { continue }
      StandardStream.error.write(lines.joined(separator: "\n") + "\n")
    }
  }
}
