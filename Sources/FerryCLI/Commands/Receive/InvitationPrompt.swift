import Ferry
import Foundation

/// How `ferry receive` presents an invitation: the `invitation` event, the KEY CHANGED warning,
/// and the `Accept? [y/N]` prompt on the terminal.
struct InvitationPrompt: Sendable {
  /// The answer to a prompt.
  enum Answer {
    case yes, no, noAnswer
    /// The sender gave up before anyone answered.
    case withdrawn
  }

  let output: EventWriter
  let bar: ProgressBar

  /// How long before the invitation expires the prompt gives up, so that the decline (with its
  /// reason) reaches the sender before its own timeout does.
  static let margin: Duration = .seconds(1)

  /// Reports the invitation (JSON) and warns loudly when the sender's key changed.
  func announce(_ invitation: Invitation, summary: OfferSummary?) {
    output.event(
      "invitation",
      [
        ("peer", .string(invitation.peer.displayName)),
        ("fingerprint", .string(invitation.fingerprint.hexString)),
        ("status", .string(Self.status(invitation))),
        ("code", .string(invitation.verificationCode.digits)),
        ("files", summary.map { .int($0.files) } ?? .null),
        ("bytes", summary.map { .int(Int($0.bytes)) } ?? .null),
      ])
    if case .changedKey(let previous) = invitation.status {
      bar.above {
        output.note(
          keyChangedWarning(
            name: invitation.peer.displayName, previous: previous, now: invitation.fingerprint))
      }
    }
  }

  /// Asks on the terminal; an empty answer is no, and so is silence until shortly before the
  /// invitation expires.
  func ask(_ invitation: Invitation, summary: OfferSummary?) async -> Answer {
    var lines = [
      "",
      "\(printable(invitation.peer.displayName)) [\(invitation.fingerprint.shortDescription)] "
        + "(\(Self.status(invitation))) wants to send",
    ]
    if let summary {
      let names = summary.names.map { "  " + printable($0) }
      lines.append("\(summary.files) file(s), \(formatBytes(summary.bytes)):")
      lines += names
      if summary.files > names.count { lines.append("  … and \(summary.files - names.count) more") }
    } else {
      lines.append("(it did not say what)")
    }
    lines.append(
      "Verification code: \(invitation.verificationCode) (compare with the sender's screen)")
    let waited = invitation.expiresAt - Self.margin - .now
    bar.above {
      StandardStream.error.write(lines.joined(separator: "\n") + "\nAccept? [y/N] ")
    }
    guard waited > .zero,
      let answer = await TerminalInput.shared.nextLine(
        timeout: waited, giveUpWhen: { !invitation.isPending })
    else {
      if !invitation.isPending {
        StandardStream.error.write(
          "\n(\(printable(invitation.peer.displayName)) withdrew the invitation)\n")
        return .withdrawn
      }
      StandardStream.error.write("\n(no answer in time: declined)\n")
      return .noAnswer
    }
    return TerminalInput.isYes(answer) ? .yes : .no
  }

  /// `trusted`, `known`, `new` or `KEY CHANGED`.
  static func status(_ invitation: Invitation) -> String {
    switch invitation.status {
    case .known(let trusted): return trusted ? "trusted" : "known"
    case .new: return "new"
    case .changedKey: return "KEY CHANGED"
    }
  }
}

/// The loud warning, on either end, about a known name that arrives with another key.
func keyChangedWarning(name: String, previous: Fingerprint, now: Fingerprint) -> String {
  "WARNING: KEY CHANGED. '\(printable(name))' is known with another key "
    + "(\(previous.shortDescription)); this one is \(now.shortDescription). It may be someone "
    + "else using that name."
}
