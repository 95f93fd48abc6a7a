import ArgumentParser

/// A command with a `--json` flag: its failure is reported as an `error` event when the flag
/// was given (``FerryMain`` asks the parsed command, rather than looking for `--json` in argv,
/// where it could be a file name or an option's value).
protocol ReportingCommand: ParsableCommand {
  /// Whether `--json` was given.
  var reportsJSON: Bool { get }
  /// Whether stdout carries data (`receive --stdout`): the error event then goes to stderr.
  var dataOnStandardOutput: Bool { get }
}

extension ReportingCommand {
  var dataOnStandardOutput: Bool { false }
}

extension SendCommand: ReportingCommand {
  var reportsJSON: Bool { output.json }
}

extension ReceiveCommand: ReportingCommand {
  var reportsJSON: Bool { output.json }
  var dataOnStandardOutput: Bool { toStandardOutput }
}

extension BrowseCommand: ReportingCommand {
  var reportsJSON: Bool { json }
}

extension IdentityCommand: ReportingCommand {
  var reportsJSON: Bool { json }
}

extension PeersListCommand: ReportingCommand {
  var reportsJSON: Bool { json }
}

extension DoctorCommand: ReportingCommand {
  var reportsJSON: Bool { json }
}
