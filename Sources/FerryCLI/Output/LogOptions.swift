import ArgumentParser

/// `-v`, shared by every command.
struct LogOptions: ParsableArguments {
  @Flag(
    name: [.short, .long],
    help: """
      Log what happens underneath (connections, discovery, every refusal and limit) on \
      stderr; FERRY_LOG=LEVEL (trace, debug, info, notice, warning, error) chooses the level.
      """)
  var verbose = false
}

/// A command with `-v`: ``FerryMain`` sets up logging from it before running the command.
protocol LoggingCommand: ParsableCommand {
  /// Its `-v` option.
  var logging: LogOptions { get }
}
