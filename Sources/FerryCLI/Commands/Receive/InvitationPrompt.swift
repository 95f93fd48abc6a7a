import Ferry
import FerryAgent
import FerryLocalSend
import Foundation

/// `ferry receive`'s person at the terminal, as the receiver's decider: the `Accept? [y/N]`
/// questions — about an invitation, about an offer that is not what its invitation announced
/// or that comes after the first, about a LocalSend sender's files or text — one at a time,
/// with the KEY CHANGED (or look-alike name) warning in the question's turn. Every name and path from the peer is escaped; the sender's name is quoted, so
/// that it cannot pass for the fingerprint and status printed after it.
struct InvitationPrompt: ReceiveDecider {
  let output: EventWriter
  let bar: ProgressBar
  let turns: PromptTurns

  /// Nobody is accepted or declined here without being asked: the policy (``ReceivePolicy``)
  /// goes first.
  func standingAnswer(for sender: SenderFacts) -> StandingAnswer? { nil }

  /// How many names a question lists.
  static let shownNames = OfferSummary.shownNames

  /// Asks `question` on the terminal (``ReceiveDecider``): who asks, what it sends, the
  /// verification code, and `Accept? [y/N]`; an empty answer is no, and so is silence until
  /// the question's deadline.
  func decide(_ question: ConsentQuestion) async -> ConsentAnswer {
    let peer = question.sender.peer
    let status = question.sender.status
    switch question.subject {
    case .invitation(let summary):
      var lines = ["", "\(Self.who(peer, status: status)) wants to send"]
      if let warning = Self.warning(status, name: peer.displayName, now: peer.fingerprint) {
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
          count: summary.files, bytes: summary.bytes, names: summary.names,
          roots: summary.roots, hidden: summary.hidden, folders: summary.folders ?? 0,
          streamed: summary.streamed ?? 0)
      } else {
        lines.append("(it did not say what)")
      }
      if let code = question.code {
        lines.append("Verification code: \(code) (compare with the sender's screen)")
      }
      return await ask(question, lines, what: "invitation")
    case .offer(let offer, let reason):
      return await ask(
        question, Self.lines(offer, from: peer, status: status, reason, question.code),
        what: "offer")
    case .localSendFiles(let offer, let sender):
      var lines = Self.heading(
        sender, status: status,
        wants: sender.isBrowser ? "wants to send (web page)" : "wants to send (LocalSend)")
      let overview = TreeOverview(offer.files.map(\.path))
      lines += Self.listing(
        count: offer.files.count, bytes: offer.totalBytes,
        names: offer.files.prefix(Self.shownNames).map(\.path), roots: overview.roots,
        hidden: overview.hidden, folders: offer.folders.count)
      return await ask(question, lines, what: "offer")
    case .localSendText(let bytes, let sender):
      let lines =
        Self.heading(sender, status: status, wants: "wants to show a text message (LocalSend)")
        + ["\(Quantity.bytes(UInt64(bytes))) of text"]
      return await self.question(
        lines, from: peer.displayName, until: question.deadline, urgent: question.urgent,
        isPending: { question.isPending })
    }
  }

  /// A question about an offer from an accepted sender whose files need their own yes.
  private static func lines(
    _ offer: OfferFacts, from peer: PeerID, status: KnownPeers.Status,
    _ reason: ConsentQuestion.OfferReason, _ code: VerificationCode?
  ) -> [String] {
    var lines = [""]
    switch reason {
    case .differsFrom(let summary):
      lines.append(
        "\(Self.who(peer, status: status)) offers other files than it announced "
          + "(\(Quantity.count(summary.files, "file")), "
          + "\(Self.size(summary.bytes, streamed: summary.streamed ?? 0, of: summary.files))):")
    case .unannounced:
      lines.append("\(Self.who(peer, status: status)) offers:")
    case .later:
      lines.append("\(Self.who(peer, status: status)) offers more files:")
    }
    let overview = TreeOverview(offer.files.map(\.path))
    lines += Self.listing(
      count: offer.files.count, bytes: offer.totalBytes,
      names: offer.files.prefix(Self.shownNames).map(\.path), roots: overview.roots,
      hidden: overview.hidden, streamed: offer.streamed.count)
    if let code { lines.append("Verification code: \(code) (compare with the sender's screen)") }
    return lines
  }

  /// Asks `lines` about `question` until its deadline; says so when its sender withdrew its
  /// `what` meanwhile.
  private func ask(_ question: ConsentQuestion, _ lines: [String], what: String) async
    -> ConsentAnswer
  {
    let name = question.sender.peer.displayName
    let answer = await self.question(
      lines, from: name, until: question.deadline, urgent: question.urgent,
      isPending: { question.isPending })
    if answer == .withdrawn {
      bar.above { StandardStream.error.write(Self.withdrawn(name, what)) }
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
  ) async -> ConsentAnswer {
    let (bar, lines) = (self.bar, lines)
    let ticket = bar.enqueue(label, until: deadline, isPending: isPending)
    defer { bar.dequeue(ticket) }
    let answer = await turns.take(urgent: urgent, isPending: isPending) {
      () async -> ConsentAnswer in
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
