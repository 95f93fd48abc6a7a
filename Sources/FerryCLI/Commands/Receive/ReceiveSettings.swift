import Ferry
import Foundation

/// What `ferry receive` runs with: each option from its flag when given, else from the config
/// file's `[receive]` table, else its default. The accept policy is taken whole from one
/// place: any of `--yes`, `--accept-from`, `--accept-trusted` on the command line replaces
/// the file's `accept` and `accept_from`.
struct ReceiveSettings: Sendable {
  let dir: String
  /// Where `dir` was given when it came from the config file (`config FILE:LINE`).
  let dirOrigin: String?
  let mkdir: Bool
  let name: String
  let yes: Bool
  let acceptFrom: [String]
  let acceptTrusted: Bool
  let port: UInt16
  let onConflict: ConflictPolicy
  let keepPartialDays: Double
  let resumeGrace: Double
  let service: ServiceType
  /// LocalSend senders are answered too (`--localsend`, or `localsend = true`).
  let localsend: Bool
  /// A person can be asked (standard input is a terminal).
  let canAsk: Bool

  /// Merges `command`'s flags over `config`; `canAsk`: whether a person can be asked (nil:
  /// when standard input is this process's terminal; `ferry daemon` asks through its API).
  ///
  /// - Throws: ``CLIFailure`` (usage) for a service type or name the config got wrong, or
  ///   when nobody can be asked and nothing says whom to accept.
  init(_ command: ReceiveCommand, config: ReceiveConfig, canAsk: Bool? = nil) throws(CLIFailure) {
    let source = config.path.map { " (config \(DisplayText.escaping($0)))" } ?? ""
    dir = command.dir ?? config.dir ?? "."
    dirOrigin =
      command.dir == nil
      ? config.path.flatMap { path in
        config.dirLine.map { "config \(DisplayText.escaping(path)):\($0)" }
      } : nil
    mkdir = command.mkdir || (config.mkdir ?? false)
    name = command.name ?? config.name ?? ProcessInfo.processInfo.hostName
    if command.yes || !command.acceptFrom.isEmpty || command.acceptTrusted {
      (yes, acceptFrom, acceptTrusted) = (command.yes, command.acceptFrom, command.acceptTrusted)
    } else {
      yes = config.accept == .yes
      acceptFrom = config.acceptFrom ?? []
      acceptTrusted = config.accept == .trusted
      if yes && !acceptFrom.isEmpty {
        throw CLIFailure(
          status: .usage,
          message: "accept = \"yes\" accepts everyone: it cannot go with accept_from\(source)",
          code: .invalidConfig)
      }
    }
    port = command.port ?? config.port ?? 0
    onConflict = command.onConflict ?? config.onConflict ?? .rename
    keepPartialDays = command.keepPartialDays ?? config.keepPartialDays ?? 7
    resumeGrace = command.resumeGrace ?? config.resumeGrace ?? 60
    localsend = command.localSend.enabled || (config.localsend ?? false)
    if !localsend && command.localSend.anyGiven {
      throw CLIFailure(
        status: .usage,
        message: "--pin, --localsend-unverified, --localsend-http, --localsend-port and "
          + "--localsend-interface go with --localsend (or localsend = true in the config)",
        code: .usage)
    }
    do {
      service = try parseServiceType(command.service ?? config.service ?? ServiceType.ferry.name)
    } catch {
      throw CLIFailure(
        status: .usage, message: error.message + source, code: .invalidServiceType)
    }
    // A terminal, and this process in its foreground: a background job reading it would be
    // stopped (SIGTTIN) with every sender waiting.
    // (A terminal that is not this process's controlling one has no foreground to tell.)
    let foreground = tcgetpgrp(0)
    self.canAsk = canAsk ?? (isatty(0) == 1 && (foreground < 0 || foreground == getpgrp()))
  }

  /// Refuses a receiver that would have nobody to ask and no policy to decide by: checked
  /// after the folder, so that a folder that does not exist is said first.
  ///
  /// - Throws: ``CLIFailure`` (usage) when there is no terminal and no `--yes`,
  ///   `--accept-from` or `--accept-trusted`.
  func checkSomeoneDecides() throws(CLIFailure) {
    if !yes && acceptFrom.isEmpty && !acceptTrusted && !canAsk {
      throw CLIFailure(
        status: .usage,
        message: "no terminal to ask on (standard input is not one, or this runs in the "
          + "background): use --yes to accept every offer, --accept-from FPR or "
          + "--accept-trusted to accept chosen senders (or accept = \"trusted\" in the config "
          + "file)",
        code: .usage)
    }
  }
}
