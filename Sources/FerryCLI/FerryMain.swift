import ArgumentParser
import Ferry
import Foundation

/// Entry point: runs the command and maps every error to the brief's exit codes (argument
/// parsing errors exit 2, not ArgumentParser's default 64).
@main
enum FerryMain {
  static func main() async {
    AllocatorTuning.apply()
    let status: Int32
    let arguments = Array(CommandLine.arguments.dropFirst())
    if let usage = Self.misuse(arguments) {
      StandardStream.error.write(usage)
      Interrupts.exit(ExitStatus.usage.rawValue)
    }
    // Before parsing succeeds, --json (or -j) is looked for among the options (before `--`),
    // and likewise --stdout (receive): stdout is the data, so even a parser error goes to stderr.
    let options = arguments.prefix { $0 != "--" }
    var json = options.contains { $0 == "--json" || $0 == "-j" }
    var dataOnStandardOutput = options.contains("--stdout")
    do {
      var command = try FerryCommand.parseAsRoot()
      json = (command as? any ReportingCommand)?.reportsJSON ?? false
      dataOnStandardOutput = (command as? any ReportingCommand)?.dataOnStandardOutput ?? false
      try LogSetup.configure(
        verbose: (command as? any LoggingCommand)?.logging.verbose ?? false,
        environment: ProcessInfo.processInfo.environment["FERRY_LOG"])
      if var command = command as? any AsyncParsableCommand {
        try await command.run()
      } else {
        try command.run()
      }
      status = ExitStatus.success.rawValue
    } catch let failure as CLIFailure {
      // After Ctrl-C, what failed is the interruption's doing: the signal handler reports it.
      if !Interrupts.wasInterrupted {
        EventWriter(json: json, dataOnStandardOutput: dataOnStandardOutput).failure(failure)
      }
      status = failure.status.rawValue
    } catch {
      let code = FerryCommand.exitCode(for: error)
      let message = FerryCommand.fullMessage(for: error)
      if code == .success {
        if !message.isEmpty { StandardStream.output.write(message + "\n") }
        status = 0
      } else {
        let usage = code == .validationFailure || code.rawValue == 64
        let hint = usage ? Self.hint(for: arguments, message: message) : nil
        if json {
          EventWriter(json: true, quiet: true).emit(
            Failure(code: .usage, exit: .usage, message: FerryCommand.message(for: error)))
        }
        if !message.isEmpty {
          StandardStream.error.write(message + "\n" + (hint.map { "Hint: \($0)\n" } ?? ""))
        }
        status = usage ? ExitStatus.usage.rawValue : code.rawValue
      }
    }
    Interrupts.exit(status)
  }

  /// The help to print (on stderr, exit 2) for a command line that names no command, or asks
  /// for help on one that does not exist; nil otherwise.
  static func misuse(_ arguments: [String]) -> String? {
    let names = FerryCommand.configuration.subcommands.compactMap {
      $0.configuration.commandName
    }
    if arguments.isEmpty {
      return FerryCommand.helpMessage() + "\n\nferry: error: no command given\n"
    }
    if arguments.first == "help", arguments.count > 1, !names.contains(arguments[1]) {
      return FerryCommand.helpMessage() + "\n\nferry: error: no command '"
        + DisplayText.escaping(arguments[1]) + "' (commands: "
        + names.joined(separator: ", ") + ")\n"
    }
    // A command mistyped: said as such, with the one it is closest to.
    if let first = arguments.first, !first.hasPrefix("-"), !names.contains(first),
      first != "help"
    {
      let near = names.map { ($0, distance(first.lowercased(), $0)) }.min { $0.1 < $1.1 }
      let suggestion = near.flatMap { $0.1 <= max(1, $0.0.count / 3) ? $0.0 : nil }
      return "ferry: error: '\(DisplayText.escaping(first))' is not a command"
        + (suggestion.map { ". Did you mean 'ferry \($0)'?" } ?? "")
        + "\n(commands: \(names.joined(separator: ", ")); 'ferry --help' says what each does)\n"
    }
    return nil
  }

  /// The edit distance (insertions, deletions, substitutions, swaps of neighbours) between
  /// `a` and `b`, by their characters.
  static func distance(_ a: String, _ b: String) -> Int {
    let (x, y) = (Array(a), Array(b))
    guard !x.isEmpty else { return y.count }
    guard !y.isEmpty else { return x.count }
    var table = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
    for i in 0...x.count { table[i][0] = i }
    for j in 0...y.count { table[0][j] = j }
    for i in 1...x.count {
      for j in 1...y.count {
        let cost = x[i - 1] == y[j - 1] ? 0 : 1
        table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
        if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
          table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
        }
      }
    }
    return table[x.count][y.count]
  }

  /// A hint for the habits other tools teach: a destination or a folder given where ferry
  /// takes none.
  static func hint(for arguments: [String], message: String) -> String? {
    guard message.contains("Unexpected argument") else { return nil }
    switch arguments.first {
    case "receive":
      return "the folder to receive into goes after --dir: 'ferry receive --dir FOLDER'"
    default:
      return nil
    }
  }
}
