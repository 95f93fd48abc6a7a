import ArgumentParser

/// `--json` and `--quiet`, shared by the commands that report as they go.
struct OutputOptions: ParsableArguments {
  @Flag(
    name: [.short, .long],
    help: "Write one JSON object per line to stdout (events in docs/CLI.md).")
  var json = false

  @Flag(name: [.short, .long], help: "Print only errors (and the receive prompt); no progress.")
  var quiet = false

  /// The writer these options ask for.
  var writer: EventWriter { EventWriter(json: json, quiet: quiet) }

  /// Whether progress bars may be drawn: stderr is a terminal, and neither flag is given.
  var showsProgress: Bool { !json && !quiet && StandardStream.error.isTerminal }
}
