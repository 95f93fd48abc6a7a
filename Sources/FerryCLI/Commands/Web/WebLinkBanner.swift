#if canImport(Glibc)
  import Glibc
#endif

/// The web link as people read it: what it is for, the risk of plain HTTP, how long it works,
/// each address's URL and — on a terminal — one QR code, for the address most likely to work
/// (``LocalSendWebAccess/addresses()`` lists IPv4 first: a phone on IPv4-only Wi-Fi reaches
/// it), drawn only when it fits the terminal.
enum WebLinkBanner {
  /// Writes the banner to standard error (nothing with `--quiet`).
  static func show(_ urls: [String], minutes: Double, doing: String, output: EventWriter) {
    let lasts = minutes >= 1 ? "\(wholeNumber(minutes)) min" : "\(wholeNumber(minutes * 60)) s"
    output.note(
      "Web page: open this link on the other device, on the same network, to \(doing) (plain "
        + "HTTP: anyone on this network could read or change what is sent; the link works for "
        + "\(lasts)):")
    guard let first = urls.first else { return }
    output.note("  \(first)")
    if urls.count > 1 {
      output.note("  or, where that address does not answer:")
      for url in urls.dropFirst() { output.note("  \(url)") }
    }
    guard StandardStream.error.isTerminal, !output.quiet,
      let lines = TerminalQRCode.lines(for: first, colors: TerminalStyle.enabled)
    else { return }
    let width = TerminalQRCode.width(of: lines)
    let (columns, rows) = terminalSize()
    // The code and the few lines around it must fit, or a phone cannot read it.
    guard columns >= width, rows >= lines.count + 3 else {
      output.note(
        "  (The QR code of the first link needs a terminal of \(width) columns and "
          + "\(lines.count + 3) rows; this one has \(columns) x \(rows): make it larger and "
          + "start again to scan it, or type the link.)")
      return
    }
    StandardStream.error.write(lines.joined(separator: "\n") + "\n")
  }

  /// Standard error's terminal size (columns, rows); 80 x 24 when it cannot be read.
  static func terminalSize() -> (columns: Int, rows: Int) {
    var size = winsize()
    guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0
    else { return (80, 24) }
    return (Int(size.ws_col), Int(size.ws_row))
  }
}
