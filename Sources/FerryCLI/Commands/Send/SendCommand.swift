import ArgumentParser
import Ferry
import FerryAgent
import Foundation
import Synchronization

/// `ferry send PATH...`: sends files and folders to a nearby receiver.
struct SendCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "send",
    abstract: "Send files and folders to a nearby machine running 'ferry receive'.",
    discussion: """
      Finds receivers through mDNS (or connects to --address), asks them to accept, shows the \
      verification code to compare with the receiver's screen, and sends. Folders keep their \
      layout. Re-running an interrupted send resumes where it stopped, and files the receiver \
      already has with the same content are not sent again. Without --to, the one \
      receiver found is used; when there are several, a terminal asks which (a script gets \
      exit 3 and the list). Repeat --to to send the same files to several receivers at once.

      Exit codes: 0 delivered, 1 a file failed, 2 bad input, 3 no receiver found or timed out, \
      4 declined, 5 authentication failed, 6 no avahi-daemon, 7 delivered but for files in \
      folders that could not be read (left out, each named), 130 interrupted.

      Examples:
        ferry send photo.jpg
        ferry send --to "Kitchen laptop" ~/Pictures/trip
        ferry send --address 192.168.1.20:52000 --to 9F2C41AB0C3D7E11 report.pdf
        ferry send --to desk --to "Kitchen laptop" slides.pdf
        find logs -name '*.log' -print0 | ferry send --files-from - -0 --to desk
        tar c photos | ferry send --to desk --stdin-name photos.tar -
        ferry send --to desk --text "dinner is at 8, bring the cables"
        ferry send --quiet --timeout 10 --retry-for 0 --to desk notes.txt
        ferry send --verbose --to desk big.iso      # what happens underneath
        ferry send --service my-app --name "build box" --to desk out.tar
        ferry send --domain example.org --to desk report.pdf   # unicast DNS-SD too
        ferry send --json --to desk *.log | jq -c 'select(.event == "done")'
        ferry send --localsend --to "Ana's Pixel" photos/   # a LocalSend app
        ferry send --protocol localsend --address 192.168.1.30:53317 --pin 4711 a
        ferry send --web --once slides.pdf   # a browser downloads it: scan the QR
        ferry send --later --to "Ana's Pixel" --localsend ~/Pictures/trip   # when it is seen
      """)

  @OptionGroup var logging: LogOptions

  @Argument(
    help: ArgumentHelp(
      "Files and folders to send; - for standard input (named by --stdin-name; a pipe is sent "
        + "as it is read, once the receiver said yes)."),
    completion: .file())
  var paths: [String] = []

  @Option(
    help: ArgumentHelp(
      "Send this text instead of files: the receiver shows it once it accepts (at most 8 KB).",
      valueName: "text"))
  var text: String?

  @Option(
    name: .customLong("stdin-name"),
    help: ArgumentHelp(
      "The file name standard input (-) is sent as (default: stdin).", valueName: "name"))
  var stdinName: String?

  @Option(
    name: [.short, .long],
    help: "A receiver: its name, or a prefix of its fingerprint. Repeat to send to several.",
    completion: PeerCompletion.names)
  var to: [String] = []

  @Option(help: "Connect to HOST:PORT directly instead of discovering.")
  var address: String?

  @Option(
    name: .customLong("files-from"),
    help: "Also send the paths listed in FILE (- for standard input), one per line.",
    completion: .file())
  var filesFrom: String?

  @Flag(name: .customShort("0"), help: "With --files-from: paths end with NUL, not newline.")
  var nullSeparated = false

  @Option(help: "Seconds to wait for discovery and acceptance together.")
  var timeout: Double = 60

  @Option(
    name: .customLong("retry-for"),
    help: ArgumentHelp(
      "Seconds to keep reconnecting after the link drops or stalls without progress (0: never).",
      discussion: """
        Waits 1, 2, 4, 8, then 15 s between attempts (±20 %), finds the receiver again by its \
        key (or at the same --address) and resumes every file from what it staged. A decline, \
        an authentication failure, Ctrl-C or a cancel at the receiver is never retried.
        """))
  var retryFor: Double = 60

  @Option(
    help: ArgumentHelp(
      "The digest that checks each file end to end: xxh3 (the default) or sha256.",
      discussion: """
        Both ends compute it over the whole file; file-done events name it. Choose sha256 to \
        compare with sha256sum. A receiver older than protocol version 3 always gets sha256.
        """,
      valueName: "algorithm"))
  var checksum: ChecksumChoice = .xxh3

  @Option(parsing: .unconditional, help: "The DNS-SD service type (RFC 6335 name).")
  var service: String = ServiceType.ferry.name

  @Option(help: "The name the receiver sees. Default: this machine's host name.")
  var name: String?

  @Flag(
    help: ArgumentHelp(
      "Hand the files to 'ferry daemon', which delivers them when the receiver (one --to) is "
        + "seen; prints the send's id.",
      discussion: """
        The daemon keeps the send across restarts (ferry outbox lists it) and sends each file \
        as it was now: one changed or gone by then is reported and not sent. Exit 2 when no \
        daemon runs.
        """))
  var later = false

  @Option(
    name: .customLong("wait-days"),
    help: ArgumentHelp(
      "With --later: days the daemon waits for the receiver (default: its outbox_days, 7).",
      valueName: "days"))
  var waitDays: Double?

  @OptionGroup var localSend: LocalSendSendOptions

  @OptionGroup var web: WebSendOptions

  @OptionGroup var output: OutputOptions

  @OptionGroup var domainOptions: DiscoveryOptions

  func validate() throws {
    if let text {
      guard paths.isEmpty && filesFrom == nil else {
        throw ValidationError("--text is sent alone: give no files with it")
      }
      guard !text.isEmpty else { throw ValidationError("--text is empty") }
      guard text.utf8.count <= OfferSummary.maximumTextBytes else {
        throw ValidationError(
          "--text is \(Quantity.bytes(UInt64(text.utf8.count))); at most "
            + "\(Quantity.bytes(UInt64(OfferSummary.maximumTextBytes))) go as a text: send "
            + "longer text as a file (ferry send - < notes.txt)")
      }
    } else if paths.isEmpty && filesFrom == nil {
      throw ValidationError(
        "give at least one file or folder to send (or --files-from, - for standard input, "
          + "--text)")
    }
    if paths.filter({ $0 == "-" }).count > 1 {
      throw ValidationError("- (standard input) can be given once")
    }
    if paths.contains("-") && filesFrom == "-" {
      throw ValidationError("standard input cannot be both a file (-) and --files-from -")
    }
    if stdinName != nil && !paths.contains("-") {
      throw ValidationError("--stdin-name names standard input: give - among the files")
    }
    if nullSeparated && filesFrom == nil { throw ValidationError("-0 goes with --files-from") }
    if later {
      guard to.count == 1 else {
        throw ValidationError(
          "--later hands the files to the daemon for one receiver: give one --to")
      }
      if text != nil || paths.contains("-") || filesFrom != nil || address != nil || web.enabled {
        throw ValidationError(
          "--later sends files and folders named here: --text, standard input (-), "
            + "--files-from, --address and --web do not go with it")
      }
      if let waitDays, !(waitDays * 86_400 >= 60 && waitDays <= 365) {
        throw ValidationError("--wait-days must be a minute (0.0007) to 365 days")
      }
    } else if waitDays != nil {
      throw ValidationError("--wait-days goes with --later")
    }
    if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
    if !(retryFor >= 0 && retryFor <= 86_400) {
      throw ValidationError("--retry-for must be between 0 and 86400 seconds")
    }
    if address != nil && to.count > 1 {
      throw ValidationError("--address reaches one receiver: give at most one --to with it")
    }
    if web.enabled {
      if text != nil { throw ValidationError("--web offers files: --text cannot go with it") }
      if !to.isEmpty || address != nil || localSend.isOn {
        throw ValidationError("--web serves a page: --to, --address and --localsend do not apply")
      }
    }
    if localSend.isOn && to.count > 1 {
      throw ValidationError("--localsend sends to one device: give at most one --to")
    }
    if to.count >= Session.maximumPeers {
      throw ValidationError("at most \(Session.maximumPeers - 1) receivers (--to) in one send")
    }
  }

  func run() async throws {
    if later { return try await LaterSend(command: self).run() }
    let events = output.writer
    let serviceType = try parseServiceType(service)
    let knownPeers = KnownPeers()
    // Fingerprints are identities, names are labels: each --to is classified (and a prefix too
    // short to stand for a key refused) before anything else happens — before standard
    // input is read, too.
    var references: [PeerReference] = []
    for text in to {
      // A trusted peer's name stands for its key, whatever name it advertises now.
      let reference = try PeerReference.parse(text, knownPeers: knownPeers)
      references.append(try reference.resolvingNickname(in: knownPeers))
    }
    let (batch, spool) = try self.batch(events)
    defer { spool?.remove() }
    if web.enabled, let batch {
      try await WebSending(
        options: web, name: name ?? ProcessInfo.processInfo.hostName, output: events,
        canAsk: Self.canAsk
      ).run(batch: batch)
      return
    }
    let identity = try loadIdentity()
    if localSend.isOn {
      let bar = ProgressBar(enabled: output.showsProgress)
      defer { bar.finish() }
      let sending = LocalSendSending(
        identity: identity, name: name ?? ProcessInfo.processInfo.hostName, pin: localSend.pin,
        output: events, bar: bar, knownPeers: knownPeers,
        decider: TerminalSendDecider(output: events, bar: bar, interactive: Self.canAsk),
        deadline: .now + .seconds(timeout), retryFor: .seconds(retryFor),
        cleanup: { spool?.remove() })
      // --localsend --to NAME: whichever protocol NAME answers by (--protocol chooses one).
      var found: LocalSendTargets.Found?
      // (A named address is a Ferry receiver's.)
      if localSend.chosen == nil, address == nil, let wanted = to.first,
        try RememberedRoute.named(wanted, in: knownPeers) == nil
      {
        let chooser = ProtocolChooser(
          targets: sending.targets, serviceType: serviceType, output: events,
          domains: try domainOptions.resolved())
        switch try await chooser.choose(wanted, as: references[0], until: sending.deadline) {
        case .localSend(let device): found = device
        case .ferry: found = nil
        }
      }
      if found != nil || localSend.chosen == .localsend || address != nil || to.isEmpty {
        try await sending.run(
          batch: batch, text: text, to: to.first, as: references.first, address: address,
          found: found)
        return
      }
    }
    let session: Session
    do {
      // A sender reads nothing but the answers to its offers.
      session = try Session(
        identity: identity, displayName: name ?? ProcessInfo.processInfo.hostName, accepting: [])
    } catch {
      throw CLIFailure(status: .usage, message: error.description, code: .invalidName)
    }
    let bar = ProgressBar(enabled: output.showsProgress)
    let reporter = SendReporter(output: events, bar: bar)
    let accepted = AcceptedKeys()
    let delivery = FerryDelivery(
      session: session, batch: batch, summary: batch?.summary ?? OfferSummary(text: text ?? ""),
      deadline: .now + .seconds(timeout), retry: RetryPolicy(retryFor: .seconds(retryFor)),
      checksum: checksum.algorithm, knownPeers: knownPeers,
      decider: TerminalSendDecider(output: events, bar: bar, interactive: Self.canAsk),
      events: { event in
        accepted.record(event)
        reporter.report(event)
      })
    let interruption = Mutex("interrupted")
    Interrupts.onInterrupt(
      reportingTo: events, message: { interruption.withLock { $0 } },
      {
        spool?.remove()  // first: a second Ctrl-C exits at once
        let message = await delivery.interrupt()
        interruption.withLock { $0 = message }
      })
    let outcomes: [CLIFailure?]
    if let address {
      let (host, port) = try parseAddress(address)
      outcomes = [
        await delivery.send(
          toAddress: address, host: host, port: port,
          to: to.first.map { ($0, references[0]) }
        ).map(CLIFailure.init)
      ]
    } else if let named = try namedOnly(knownPeers) {
      // Every --to is a named address: no discovery (none may be running here).
      let claimed = ClaimedReceivers()
      outcomes = await withTaskGroup(of: CLIFailure?.self) { group in
        for (entry, address) in named {
          group.addTask {
            await Self.send(
              delivery, toNamed: entry, at: address, knownPeers: knownPeers, claimed: claimed,
              accepted: accepted, output: events)
          }
        }
        return await group.reduce(into: []) { $0.append($1) }
      }
    } else {
      outcomes = try await discoverAndSend(
        delivery, output: events, serviceType: serviceType, references: references,
        accepted: accepted, streamed: batch?.entries.contains(where: \.isStreamed) == true)
    }
    bar.finish()
    // What was sent last (a RESET, the GOODBYE) leaves before the process exits.
    await session.closeAndWait(timeout: .seconds(1))
    if let failure = combined(outcomes) { throw failure }
  }

  /// Finds the receivers (every `--to`, or the one or ones chosen) and delivers to each as soon
  /// as it is found.
  private func discoverAndSend(
    _ delivery: FerryDelivery, output: EventWriter, serviceType: ServiceType,
    references: [PeerReference], accepted: AcceptedKeys, streamed: Bool
  ) async throws -> [CLIFailure?] {
    let browser: Browser
    do {
      browser = try Browser(serviceType: serviceType, domains: domainOptions.resolved())
    } catch let error as DiscoveryError {
      throw cliFailure(error)
    }
    defer { browser.stop() }
    let finder = ReceiverFinder(
      browser: browser, deadline: delivery.deadline,
      stillLooking: { wanted in output.note(ReceiverFinder.waitingWords(wanted)) })
    let wanted = to
    if wanted.isEmpty {
      output.note("Looking for receivers…")
      let chosen = try await finder.choose(ask: Self.canAsk)
      if chosen.count > 1, streamed {
        throw CLIFailure(
          status: .usage,
          message: "standard input is sent as it is read, to one receiver: to send it to "
            + "several, name each with --to (it is then read to its end first)",
          code: .usage)
      }
      return await withTaskGroup(of: CLIFailure?.self) { group in
        for target in chosen {
          group.addTask { await delivery.send(to: target, browser: browser).map(CLIFailure.init) }
        }
        return await group.reduce(into: []) { $0.append($1) }
      }
    }
    output.note("Looking for \(wanted.map { "'\($0)'" }.joined(separator: ", "))…")
    let claimed = ClaimedReceivers()
    let ask = Self.canAsk
    return await withTaskGroup(of: CLIFailure?.self) { group in
      for (name, reference) in zip(wanted, references) {
        group.addTask {
          await Self.send(
            delivery, to: name, as: reference, finder: finder, browser: browser,
            claimed: claimed, accepted: accepted, ask: ask, output: output)
        }
      }
      return await group.reduce(into: []) { $0.append($1) }
    }
  }

  /// Whether a person can be asked: standard input and standard error are terminals.
  private static var canAsk: Bool { isatty(0) == 1 && StandardStream.error.isTerminal }

  /// One exit status for all receivers: success if every one succeeded; the shared status if
  /// they all failed alike; 1 (some transfer failed, code `partial`) otherwise.
  private func combined(_ outcomes: [CLIFailure?]) -> CLIFailure? {
    let failures = outcomes.compactMap { $0 }
    guard let first = failures.first else { return nil }
    if outcomes.count == 1 { return first }
    let uniform =
      failures.count == outcomes.count && failures.allSatisfy { $0.status == first.status }
    return CLIFailure(
      status: uniform ? first.status : .transferFailed,
      message: "\(failures.count) of \(outcomes.count) receiver(s) did not get all the files:\n"
        + failures.map { "  " + $0.message }.joined(separator: "\n"),
      code: uniform ? first.code : .partial)
  }
}

/// Parses `HOST:PORT` (`[v6]:PORT` for IPv6).
func parseAddress(_ text: String) throws(CLIFailure) -> (String, UInt16) {
  var host = Substring(text)
  guard let colon = host.lastIndex(of: ":"), let port = UInt16(host[host.index(after: colon)...]),
    port > 0
  else {
    throw CLIFailure(
      status: .usage, message: "--address wants HOST:PORT, not \"\(text)\"", code: .invalidAddress
    )
  }
  host = host[..<colon]
  if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
  return (String(host), port)
}
