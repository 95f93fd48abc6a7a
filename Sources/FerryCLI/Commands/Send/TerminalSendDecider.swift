import Ferry
import FerryAgent
import FerryLocalSend

/// `ferry send`'s person at the terminal, as the send's decider: asked whether to send to a
/// receiver whose name is trusted with another key (in a script: no, exit 5), and whether a
/// browser may download what `--web` shares (`--yes`: every browser that opens the link).
struct TerminalSendDecider: SendDecider {
  let output: EventWriter
  let bar: ProgressBar
  /// Whether a person can be asked (stdin and stderr are terminals).
  let interactive: Bool
  /// `--web --yes`: every browser is let in without asking.
  var admitsEveryBrowser = false
  /// One question on the terminal at a time.
  let turns = PromptTurns()

  /// Asks "Send to it anyway? [y/N]" on a terminal; no without one.
  func sendDespiteKeyChange(to peer: PeerID, previous: Fingerprint, timeout: Duration) async
    -> Bool
  {
    guard interactive else { return false }
    let answer = await TerminalInput.shared.nextLine(
      asking: { [bar] in bar.above { StandardStream.error.write("Send to it anyway? [y/N] ") } },
      timeout: timeout)
    return TerminalInput.isYes(answer)
  }

  /// Lets a browser in by `--yes` (said), or by asking the person.
  func admit(_ request: WebShareServer.Request, until deadline: ContinuousClock.Instant) async
    -> Bool
  {
    let agent = BrowserName.of(request.userAgent).map { printable($0) } ?? "no User-Agent"
    if admitsEveryBrowser {
      output.note("Letting in a browser at \(request.address) (\(agent)) (--yes).")
      return true
    }
    let lines = [
      "", "A browser at \(request.address) wants to download the files (web page)", "  \(agent)",
      "  plain HTTP: anyone on this network could read what it downloads",
    ]
    let prompt = InvitationPrompt(output: output, bar: bar, turns: turns)
    let answer = await prompt.question(
      lines, from: "browser at \(request.address)", until: deadline,
      isPending: { request.isPending })
    return answer == .yes
  }
}
