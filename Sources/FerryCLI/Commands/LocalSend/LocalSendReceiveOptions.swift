import ArgumentParser
import FerryLocalSend

/// `ferry receive`'s LocalSend options: off unless `--localsend` (or the config's
/// `localsend = true`) turns them on; nothing listens on 53317 or is multicast otherwise.
struct LocalSendReceiveOptions: ParsableArguments {
  @Flag(
    name: .customLong("localsend"),
    help: ArgumentHelp(
      "Also receive from LocalSend apps (protocol 2.2): answer on port 53317 and announce "
        + "this machine by multicast on the local network.",
      discussion: """
        Senders must present a client certificate (LocalSend 1.18 and later) whose fingerprint \
        is the one they claim; the same prompt, policies and events as for Ferry senders.
        """))
  var enabled = false

  @Option(
    name: .customLong("pin"),
    help: ArgumentHelp(
      "A PIN LocalSend senders must give (3 wrong tries: that address is refused until ferry "
        + "restarts; 30 from everyone: all are refused for 10 minutes).",
      valueName: "PIN"))
  var pin: String?

  @Flag(
    name: .customLong("localsend-unverified"),
    help: ArgumentHelp(
      "Let LocalSend senders that present no certificate ask (apps 1.17 and older, and other "
        + "implementations without certificates): shown and reported as UNVERIFIED; never "
        + "accepted by --accept-from, --accept-trusted or a known name."))
  var unverified = false

  /// `--localsend-legacy`, the option's name before it said what it does; still taken.
  @Flag(name: .customLong("localsend-legacy"), help: .hidden)
  var legacyName = false

  /// Whether senders without a certificate may ask.
  var legacy: Bool { unverified || legacyName }

  @Flag(
    name: .customLong("localsend-http"),
    help: ArgumentHelp(
      "Serve LocalSend over plain HTTP (its 'encryption off'): anyone on the network can read "
        + "and alter the files, and nobody is verified."))
  var plainHTTP = false

  @Option(
    name: .customLong("localsend-port"),
    help: "The LocalSend port (the one apps look for).")
  var port: UInt16 = LocalSendProtocol.defaultPort

  @Option(
    name: .customLong("localsend-interface"),
    help: ArgumentHelp(
      "Announce and listen for LocalSend devices on this interface only (repeatable; "
        + "default: every interface with multicast).", valueName: "name"))
  var interfaces: [String] = []

  /// Whether an option that only LocalSend reads was given.
  var anyGiven: Bool {
    pin != nil || legacy || plainHTTP || !interfaces.isEmpty
      || port != LocalSendProtocol.defaultPort
  }

  func validate() throws {
    if let pin {
      guard !pin.isEmpty, pin.utf8.count <= 64,
        pin.utf8.allSatisfy({ $0 >= 0x21 && $0 < 0x7F })
      else {
        throw ValidationError("--pin must be 1-64 printable ASCII characters without spaces")
      }
    }
  }
}
