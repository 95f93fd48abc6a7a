import Ferry
import Foundation

/// How `ferry receive` presents what it is asked: the `invitation` event, the KEY CHANGED (or
/// look-alike name) warning, and the `Accept? [y/N]` questions on the terminal — about an
/// invitation, and about an offer that is not what its invitation announced or that comes after
/// the first. Every name and path from the peer is escaped; the sender's name is quoted, so
/// that it cannot pass for the fingerprint and status printed after it.
struct InvitationPrompt: Sendable {
  /// The answer to a prompt.
  enum Answer {
    case yes, no, noAnswer
    /// The sender gave up before anyone answered.
    case withdrawn
  }

  let output: EventWriter
  let bar: ProgressBar
  let turns: PromptTurns

  /// How long before the invitation expires the prompt gives up, so that the decline (with its
  /// reason) reaches the sender before its own timeout does.
  static let margin: Duration = .seconds(1)

  /// How many names a question lists.
  static let shownNames = OfferSummary.shownNames

  /// Reports the invitation (JSON). The warning about a changed key or a look-alike name is
  /// part of the question (``ask(_:summary:)``), drawn in its turn, or printed by
  /// ``warn(_:)`` when nobody is asked.
  func announce(_ invitation: Invitation, summary: OfferSummary?) {
    output.emit(
      InvitationAsked(
        peer: invitation.peer.displayName, fingerprint: invitation.fingerprint.hexString,
        status: Self.status(invitation.status), code: invitation.verificationCode.digits,
        files: summary?.files, folders: summary.map { $0.folders ?? 0 },
        text: summary?.text != nil, bytes: summary.map { Int($0.bytes) },
        streamed: summary.map { $0.streamed ?? 0 },
        expires: EventWriter.timestamp(Self.date(of: invitation.expiresAt))))
  }

  /// Warns loudly, now, when the sender's key changed or its name mimics a known one: for an
  /// invitation decided without asking.
  func warn(_ invitation: Invitation) {
    if let warning = Self.warning(
      invitation.status, name: invitation.peer.displayName, now: invitation.fingerprint)
    {
      bar.above { output.note(warning) }
    }
  }

  /// Asks about an invitation on the terminal; an empty answer is no, and so is silence until
  /// shortly before the invitation expires.
  func ask(_ invitation: Invitation, summary: OfferSummary?) async -> Answer {
    var lines = ["", "\(Self.who(invitation.peer, status: invitation.status)) wants to send"]
    if let warning = Self.warning(
      invitation.status, name: invitation.peer.displayName, now: invitation.fingerprint)
    {
      // In the question's turn, above what it asks: never printed over another question.
      lines.insert(contentsOf: ["", warning], at: 0)
    }
    if let text = summary?.text {
      // What it says is shown once accepted: a yes is consent to read it here.
      let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count
      lines.append(
        "a text: \(Quantity.count(text.count, "character")), "
          + "\(Quantity.count(lineCount, "line"))")
    } else if let summary {
      lines += Self.listing(
        count: summary.files, bytes: summary.bytes, names: summary.names, roots: summary.roots,
        hidden: summary.hidden, folders: summary.folders ?? 0, streamed: summary.streamed ?? 0)
    } else {
      lines.append("(it did not say what)")
    }
    lines.append(
      "Verification code: \(invitation.verificationCode) (compare with the sender's screen)")
    let answer = await question(
      lines, from: invitation.peer.displayName, until: invitation.expiresAt - Self.margin,
      isPending: { invitation.isPending })
    if answer == .withdrawn {
      bar.above {
        StandardStream.error.write(Self.withdrawn(invitation.peer.displayName, "invitation"))
      }
    }
    return answer
  }

  /// Why an offer needs its own yes.
  enum OfferQuestion {
    /// The first offer, which is not what the invitation announced.
    case differsFrom(OfferSummary)
    /// The first offer, after an invitation that did not say what it would send.
    case unannounced
    /// A later offer on the same connection.
    case later
  }

  /// Asks about an offer whose files need their own yes.
  func ask(
    _ offer: ResourceOffer, status: KnownPeers.Status, code: VerificationCode,
    because reason: OfferQuestion
  ) async -> Answer {
    var lines = [""]
    switch reason {
    case .differsFrom(let summary):
      lines.append(
        "\(Self.who(offer.peer, status: status)) offers other files than it announced "
          + "(\(Quantity.count(summary.files, "file")), "
          + "\(Self.size(summary.bytes, streamed: summary.streamed ?? 0, of: summary.files))):")
    case .unannounced:
      lines.append("\(Self.who(offer.peer, status: status)) offers:")
    case .later:
      lines.append("\(Self.who(offer.peer, status: status)) offers more files:")
    }
    let overview = TreeOverview(offer.files.map(\.path))
    lines += Self.listing(
      count: offer.files.count, bytes: offer.totalBytes,
      names: offer.files.prefix(Self.shownNames).map(\.path), roots: overview.roots,
      hidden: overview.hidden, streamed: offer.streamed.count)
    lines.append("Verification code: \(code) (compare with the sender's screen)")
    return await ask(about: offer, lines)
  }

  /// Asks `lines` about `offer` until shortly before its decision times out; says so when its
  /// sender withdrew it meanwhile.
  func ask(about offer: ResourceOffer, _ lines: [String]) async -> Answer {
    let answer = await question(
      lines, from: offer.peer.displayName,
      until: .now + ResourceOffer.decisionTimeout - .seconds(5), urgent: true,
      isPending: { offer.isPending })
    if answer == .withdrawn {
      bar.above { StandardStream.error.write(Self.withdrawn(offer.peer.displayName, "offer")) }
    }
    return answer
  }

  /// Why a question ended unanswered: `name` withdrew its `what` — or this receiver is
  /// stopping (Ctrl-C declines every open question; that is not the sender's doing).
  static func withdrawn(_ name: String, _ what: String) -> String {
    Interrupts.wasInterrupted
      ? "(declined: ferry receive is stopping; \(printable(name)) is told so)\n"
      : "(\(printable(name)) withdrew the \(what))\n"
  }

  /// The question's last line.
  static let promptText = "Accept? [y/N] "

  /// Shows `lines` and `Accept? [y/N]`, and waits for the answer (at most until `deadline`, and
  /// only while `isPending`), one question at a time. A question waiting its turn is listed,
  /// with the time it has left, below the one being asked. What was typed before the question
  /// appeared is discarded; an answer that is neither yes nor no is asked again; Enter alone
  /// is no.
  func question(
    _ lines: [String], from label: String, until deadline: ContinuousClock.Instant,
    urgent: Bool = false, isPending: @escaping @Sendable () -> Bool
  ) async -> Answer {
    let (bar, lines) = (self.bar, lines)
    let ticket = bar.enqueue(label, until: deadline, isPending: isPending)
    defer { bar.dequeue(ticket) }
    let answer = await turns.take(urgent: urgent, isPending: isPending) { () async -> Answer in
      bar.dequeue(ticket)
      guard isPending() else { return .withdrawn }
      bar.above {
        // A warning (KEY CHANGED, LOOK-ALIKE NAME) in bold red where colour is wanted.
        let shown = lines.map { line in
          let safe = DisplayText.terminalSafe(line)
          return line.hasPrefix("WARNING:") ? TerminalStyle.alert(safe) : safe
        }
        StandardStream.error.write(shown.joined(separator: "\n") + "\n")
      }
      while true {
        guard
          let answer = await TerminalInput.shared.nextLine(
            asking: { bar.showPrompt(Self.promptText) }, timeout: max(.zero, deadline - .now),
            giveUpWhen: { !isPending() })
        else {
          if !isPending() {
            bar.endPrompt(then: "")
            return .withdrawn
          }
          bar.endPrompt(then: "(no answer in time: declined)")
          return .noAnswer
        }
        bar.answered(answer)
        if let yes = TerminalInput.verdict(answer) { return yes ? .yes : .no }
        bar.above {
          StandardStream.error.write("Please answer y (yes) or n (no); Enter alone is no.\n")
        }
      }
    }
    return answer ?? .withdrawn
  }

  /// The wall-clock time of `instant`.
  static func date(of instant: ContinuousClock.Instant) -> Date {
    Date().addingTimeInterval((instant - .now).inSeconds)
  }

  /// `"name" [9F2C 41AB 0C3D 7E11] (new)`: the name quoted and escaped, then what the program
  /// itself knows.
  static func who(_ peer: PeerID, status: KnownPeers.Status) -> String {
    "\(DisplayText.quoted(peer.displayName)) [\(peer.fingerprint.shortDescription)] "
      + "(\(Self.status(status)))"
  }

  /// How many top-level entries a question lists.
  static let shownRoots = 8

  /// `N files, SIZE:` and the first names (escaped), with `… and N more`; when names are not
  /// all shown, the top-level entries they are in; and how many files are hidden.
  static func listing(
    count: Int, bytes: UInt64, names: [String], roots: [String]?, hidden: Int?, folders: Int = 0,
    streamed: Int = 0
  ) -> [String] {
    let empty = folders > 0 ? ", \(Quantity.count(folders, "empty folder"))" : ""
    var lines = [
      "\(Quantity.count(count, "file"))\(empty), \(size(bytes, streamed: streamed, of: count)):"
    ]
    lines += names.prefix(shownNames).map { "  " + printable($0) }
    // Where they all go: whenever some are not named (more files, or empty folders).
    if count > min(names.count, shownNames) || folders > 0 {
      if count > min(names.count, shownNames) {
        lines.append("  … and \(count - min(names.count, shownNames)) more")
      }
      if let roots {
        let shown = roots.prefix(shownRoots).map { printable($0) }.joined(separator: ", ")
        let more = roots.count > shownRoots ? " and \(roots.count - shownRoots) more" : ""
        lines.append(
          "  in \(roots.count) top-level entr\(roots.count == 1 ? "y" : "ies"): \(shown)\(more)")
      } else {
        lines.append("  (the sender did not list where they go)")
      }
    }
    if let hidden, hidden > 0 {
      let plural = hidden == 1 ? "" : "s"
      let what = folders > 0 ? "hidden file\(plural) or folder\(plural)" : "hidden file\(plural)"
      lines.append("  including \(hidden) \(what) (a name starting with \".\")")
    } else if hidden == nil {
      lines.append("  (the sender did not say whether any file is hidden)")
    }
    return lines
  }

  /// The size of `count` files of `bytes` bytes, `streamed` of which (standard input read as it
  /// is sent) have no size yet: `1.2 MB`, `size unknown (sent as it is read)`, or
  /// `1.2 MB and 1 of unknown size`.
  static func size(_ bytes: UInt64, streamed: Int, of count: Int) -> String {
    guard streamed > 0 else { return Quantity.bytes(bytes) }
    guard streamed < count else { return "size unknown (sent as it is read)" }
    return "\(Quantity.bytes(bytes)) and \(streamed) of unknown size"
  }

  /// `trusted`, `known`, `new`, `KEY CHANGED` or `LOOK-ALIKE NAME`.
  static func status(_ status: KnownPeers.Status) -> String {
    switch status {
    case .known(let trusted): return trusted ? "trusted" : "known"
    case .new: return "new"
    case .changedKey: return "KEY CHANGED"
    case .similarName: return "LOOK-ALIKE NAME"
    }
  }

  /// The loud warning for a changed key or a look-alike name, nil otherwise.
  static func warning(_ status: KnownPeers.Status, name: String, now: Fingerprint) -> String? {
    switch status {
    case .changedKey(let previous):
      return keyChangedWarning(name: name, previous: previous, now: now)
    case .similarName(let known, let previous):
      return "WARNING: LOOK-ALIKE NAME. \(DisplayText.quoted(name)) is not a trusted name, but "
        + "it looks like \(DisplayText.quoted(known)), trusted with another key "
        + "(\(previous.shortDescription)); this one is \(now.shortDescription). It may be "
        + "someone passing for that peer."
    case .known, .new:
      return nil
    }
  }
}

/// The loud warning, on either end, about a trusted peer's name that arrives with another key.
func keyChangedWarning(name: String, previous: Fingerprint, now: Fingerprint) -> String {
  "WARNING: KEY CHANGED. \(DisplayText.quoted(name)) is trusted with another key "
    + "(\(previous.shortDescription)); this one is \(now.shortDescription). It may be someone "
    + "else using that name."
}
