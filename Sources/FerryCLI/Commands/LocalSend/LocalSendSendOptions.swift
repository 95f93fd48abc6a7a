import ArgumentParser

/// `ferry send`'s LocalSend options: `--localsend` (or `--protocol localsend`) sends to a
/// LocalSend app instead of a Ferry receiver.
struct LocalSendSendOptions: ParsableArguments {
  /// Which protocol a send speaks.
  enum SendProtocol: String, ExpressibleByArgument, CaseIterable {
    case ferry, localsend
  }

  @Flag(
    name: .customLong("localsend"),
    help: ArgumentHelp(
      "Send to a LocalSend app (protocol 2.2), found by its multicast discovery (--to its "
        + "alias or fingerprint) or at --address HOST:PORT."))
  var enabled = false

  @Option(
    name: .customLong("protocol"),
    help: "The receiver's protocol: ferry (the default) or localsend (as --localsend).")
  var chosen: SendProtocol?

  @Option(
    name: .customLong("pin"),
    help: ArgumentHelp("The PIN a LocalSend receiver asks for.", valueName: "PIN"))
  var pin: String?

  /// Whether this send goes to a LocalSend device.
  var isOn: Bool { enabled || chosen == .localsend }

  func validate() throws {
    if enabled && chosen == .ferry {
      throw ValidationError("--localsend and --protocol ferry contradict each other")
    }
    if pin != nil && !isOn {
      throw ValidationError("--pin is for LocalSend receivers: add --localsend")
    }
  }
}
