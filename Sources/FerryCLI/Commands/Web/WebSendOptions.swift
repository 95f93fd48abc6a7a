import ArgumentParser

/// `ferry send`'s web page options: `--web` serves the files on a page a browser downloads
/// them from (a link with an unguessable token, drawn as a QR code), instead of sending them.
struct WebSendOptions: ParsableArguments {
  @Flag(
    name: .customLong("web"),
    help: ArgumentHelp(
      "Serve the files on a web page a browser on the local network downloads them from: its "
        + "link (printed, with a QR code) carries an unguessable token and expires; each "
        + "browser is asked about first."))
  var enabled = false

  @Option(
    name: .customLong("web-port"), help: "With --web: the page's port (default: any free one).")
  var chosenPort: UInt16?

  @Option(
    name: .customLong("web-expires"),
    help: ArgumentHelp(
      "With --web: minutes until the link stops working (default 10).", valueName: "minutes"))
  var chosenMinutes: Double?

  @Flag(
    name: .customLong("once"),
    help: "With --web: end once one browser has downloaded every file.")
  var once = false

  @Flag(
    name: [.customShort("y"), .customLong("yes")],
    help: "With --web: let every browser that opens the link download, without asking.")
  var yes = false

  /// The port (0: any free one).
  var port: UInt16 { chosenPort ?? 0 }
  /// Minutes until the link expires.
  var minutes: Double { WebLinkExpiry.minutes(chosenMinutes) }

  func validate() throws {
    guard enabled else {
      if chosenPort != nil || chosenMinutes != nil || once || yes {
        throw ValidationError("--web-port, --web-expires, --once and --yes go with --web")
      }
      return
    }
    try WebLinkExpiry.validate(minutes)
  }
}
