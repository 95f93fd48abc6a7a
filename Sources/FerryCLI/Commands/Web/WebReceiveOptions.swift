import ArgumentParser

/// `ferry receive`'s web page options: `--web` serves a page through which a browser on the
/// local network uploads files (a link with an unguessable token, drawn as a QR code).
struct WebReceiveOptions: ParsableArguments {
  @Flag(
    name: .customLong("web"),
    help: ArgumentHelp(
      "Receive from browsers instead: serve a web page through which a browser on the local "
        + "network sends files; its link (printed, with a QR code) carries an unguessable token, "
        + "and the receiver ends when it expires.",
      discussion: """
        Ferry senders are not taken meanwhile (run ferry receive for them); with --localsend, \
        LocalSend apps are, and the receiver goes on after the link expires. Plain HTTP: \
        browsers refuse self-signed certificates. Anyone on the network could read or change \
        what a browser sends; each browser's files are asked about (or taken by --yes) as a \
        LocalSend sender's are.
        """))
  var enabled = false

  @Option(
    name: .customLong("web-port"),
    help: "The web page's port (default: any free one).")
  var chosenPort: UInt16?

  @Option(
    name: .customLong("web-expires"),
    help: ArgumentHelp(
      "Minutes until the web link stops working (default 10).", valueName: "minutes"))
  var chosenMinutes: Double?

  /// The port (0: any free one).
  var port: UInt16 { chosenPort ?? 0 }
  /// Minutes until the link expires.
  var minutes: Double { WebLinkExpiry.minutes(chosenMinutes) }

  func validate() throws {
    try WebLinkExpiry.validate(minutes)
    if !enabled && (chosenPort != nil || chosenMinutes != nil) {
      throw ValidationError("--web-port and --web-expires go with --web")
    }
  }
}
