import ArgumentParser
import Ferry
import Foundation

/// `ferry receive`: advertises this machine and receives files, asking first.
struct ReceiveCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "receive",
    abstract: "Receive files from nearby machines, asking before each transfer.",
    discussion: """
      Listens (TLS 1.3) and advertises this machine through avahi-daemon until Ctrl-C (exit \
      130). For each sender it shows the name, short fingerprint, whether it is known, new or \
      KEY CHANGED, the files offered and the verification code, and asks 'Accept? [y/N]' (no \
      answer in time declines). --yes accepts everything; --accept-from accepts only the \
      fingerprints given and declines the rest without asking. With no terminal, one of the \
      two is required. Without avahi-daemon it still listens, and senders reach it with \
      'ferry send --address HOST:PORT' (fix the port with --port).

      Files are written to a staging folder inside --dir, verified (XXH3-128, or SHA-256 when the sender asks) and then moved \
      into place; nothing partial ever appears in --dir itself. The folder is checked before \
      anything is advertised: it must exist (--mkdir creates it) and be writable.

      Defaults for these options can be kept in a config file: --config FILE, else \
      $FERRY_CONFIG, else config.toml in ferry's home (~/.config/ferry), read when it exists. \
      Its [receive] table takes the long options' names with '_' (dir, mkdir, name, \
      accept = "ask" | "trusted" | "yes", accept_from, port, on_conflict, keep_partial_days, \
      resume_grace, service, localsend); flags given here override it.

      Examples:
        ferry receive
        ferry receive --dir ~/Downloads --name "Kitchen laptop"
        ferry receive --yes --once --json --dir /srv/incoming
        ferry receive --accept-from 9F2C41AB0C3D7E11 --dir backups
        ferry receive --accept-trusted --dir ~/Inbox --mkdir
        ferry receive --config /etc/ferry/config.toml
        ferry receive --stdout | tar x      # asks first, on the terminal
        ferry receive --on-conflict skip --keep-partial-days 1 --resume-grace 300
        ferry receive --quiet --verbose --accept-trusted
        ferry receive --service my-app --name "build box" --yes
        ferry receive --localsend --accept-trusted --pin 4711   # LocalSend apps too
        ferry receive --localsend --localsend-unverified --localsend-interface wlan0
        ferry receive --localsend --localsend-http --localsend-port 53318 -y -d in
        ferry receive --web --once              # a browser sends: scan the QR code
        ferry receive --web --web-port 8080 --web-expires 30 --dir ~/Inbox
      """)

  @OptionGroup var logging: LogOptions

  @Option(
    name: [.short, .long],
    help: ArgumentHelp(
      "Where received files go (default: the current directory).", valueName: "folder"),
    completion: .directory)
  var dir: String?

  @Flag(help: "Create --dir (and its parents) if it does not exist.")
  var mkdir = false

  @Option(
    help: ArgumentHelp(
      "A config file with defaults for these options (default: $FERRY_CONFIG, else "
        + "config.toml in ferry's home, when it exists).", valueName: "file"),
    completion: .file(extensions: ["toml"]))
  var config: String?

  @Flag(name: [.short, .long], help: "Accept every offer without asking.")
  var yes = false

  @Option(
    name: .customLong("accept-from"),
    help: "Accept offers from this fingerprint (prefix allowed; repeatable); decline others.")
  var acceptFrom: [String] = []

  @Flag(
    name: .customLong("accept-trusted"),
    help: "Accept senders trusted with 'ferry trust' without asking; ask about the others.")
  var acceptTrusted = false

  @Flag(help: "Exit after the first accepted offer, with its exit code.")
  var once = false

  @Flag(
    name: .customLong("stdout"),
    help: ArgumentHelp(
      "Write one received file to standard output once it is verified, then exit (--once); "
        + "events and messages go to stderr.",
      discussion: """
        Staged in --dir when given, else in a private folder in $TMPDIR, and removed once \
        written. Offers of more than one file are declined.
        """))
  var toStandardOutput = false

  @Option(help: "The TCP port to listen on (default: any free port).")
  var port: UInt16?

  @Option(
    name: .customLong("on-conflict"),
    help: "When a name is taken: rename (the default), overwrite or skip.")
  var onConflict: ConflictPolicy?

  @Option(
    name: .customLong("keep-partial-days"),
    help: ArgumentHelp(
      "Days a partial file waits in DIR/.ferry-partial for its sender to resume it "
        + "(default: 7)."))
  var keepPartialDays: Double?

  @Option(
    name: .customLong("resume-grace"),
    help: ArgumentHelp(
      "Seconds a sender whose connection was lost may take to come back for the same files and "
        + "be accepted without asking again (0: always ask; default: 60).",
      valueName: "SECONDS"))
  var resumeGrace: Double?

  @Option(
    parsing: .unconditional,
    help: "The DNS-SD service type to publish (RFC 6335 name; default: ferry).")
  var service: String?

  @Option(help: "The name senders see (1-63 bytes of UTF-8). Default: this machine's host name.")
  var name: String?

  @OptionGroup var localSend: LocalSendReceiveOptions

  @OptionGroup var web: WebReceiveOptions

  @OptionGroup var output: OutputOptions

  func validate() throws {
    if let service {
      do {
        _ = try parseServiceType(service)
      } catch {
        throw ValidationError(error.message)
      }
    }
    if yes && (!acceptFrom.isEmpty || acceptTrusted) {
      throw ValidationError(
        "--yes accepts everyone: it cannot be used with --accept-from or --accept-trusted")
    }
    if let resumeGrace, !(resumeGrace >= 0 && resumeGrace <= 86_400) {
      throw ValidationError("--resume-grace must be between 0 and 86400 seconds")
    }
    if let keepPartialDays, !(keepPartialDays >= 0 && keepPartialDays <= 36_500) {
      throw ValidationError("--keep-partial-days must be between 0 and 36500")
    }
    // A file's raw bytes would land in the terminal (escape sequences included), as
    // gzip -c and curl refuse to do.
    if toStandardOutput && StandardStream.output.isTerminal {
      throw ValidationError(
        "--stdout writes the received file to standard output, which is this terminal: "
          + "redirect it (ferry receive --stdout > FILE, or | tar x)")
    }
  }

  func run() async throws {
    var output = self.output.writer
    output.dataOnStandardOutput = toStandardOutput
    let once = self.once || toStandardOutput
    let settings = try ReceiveSettings(self, config: ReceiveConfig.load(explicit: config))
    let (serviceType, displayName, port) = (settings.service, settings.name, settings.port)
    // Checked before anything is advertised: nobody is accepted into a folder that fails.
    let sink =
      try toStandardOutput
      ? StandardOutputSink(
        privateFolder: dir == nil ? StandardOutputSink.makePrivateFolder() : nil) : nil
    // Removed on every way out: an error below, the end, Ctrl-C (first thing).
    defer { sink?.removePrivateFolder() }
    if let sink { Interrupts.onInterrupt { sink.removePrivateFolder() } }
    let folder = try ReceiveDestination(
      sink?.privateFolder?.path ?? settings.dir, create: settings.mkdir,
      origin: sink?.privateFolder == nil ? settings.dirOrigin : nil)
    let destination = folder.url
    try settings.checkSomeoneDecides()
    let knownPeers = KnownPeers()
    let policy = try ReceivePolicy.from(
      yes: settings.yes, acceptFrom: settings.acceptFrom, acceptTrusted: settings.acceptTrusted,
      canAsk: settings.canAsk, knownPeers: knownPeers)
    let identity = try loadIdentity()
    let session: Session
    let advertiser: Advertiser
    do {
      // Files only: messages and streams nobody here reads are refused, not buffered.
      session = try Session(identity: identity, displayName: displayName, accepting: [])
      advertiser = try Advertiser(
        identity: identity, displayName: displayName, serviceType: serviceType, port: port,
        knownPeers: knownPeers)
    } catch let error as DiscoveryError {
      throw cliFailure(error)
    } catch {
      throw CLIFailure(status: .usage, message: "\(error)", code: .invalidName)
    }
    // Every offer is decided here, on its real files: consent binds to what is written.
    session.askAboutResourceOffers()
    let incoming = IncomingTransfers()
    let open = OpenInvitations()
    let bar = ProgressBar(enabled: self.output.showsProgress)
    // Listening before Ctrl-C's cleanup is set, so that the cleanup stops it too (a later
    // onInterrupt would replace this one).
    let localSend =
      settings.localsend
      ? try await LocalSendReceiving.start(
        self.localSend, identity: identity, displayName: displayName, output: output) : nil
    let webPage =
      web.enabled
      ? try await WebReceiving.start(
        web, identity: identity, displayName: displayName, output: output) : nil
    Interrupts.onInterrupt { [output] in
      // What had arrived stays on screen; the cancels below draw nothing over it.
      bar.stop()
      sink?.removePrivateFolder()
      advertiser.stop()
      localSend?.stopListening()
      webPage?.stopListening()
      // Senders waiting on a question hear a decline (exit 4), not a vanished connection;
      // the DECLINE needs a moment on the wire before the process ends.
      if open.declineAll(reason: "the receiver stopped") > 0 {
        try? await Task.sleep(for: .milliseconds(300))
      }
      // Cancel what is arriving (the staged bytes stay for a resume); the RESETs leave before
      // each connection closes, and it closes once the sender has read them (at most 5 s).
      // Their end is reported here: the session's own report would come after it closed.
      for transfer in incoming.cancelAll() {
        ReceiveReporter.interrupted(transfer, output: output, kept: sink == nil)
      }
      await session.closeAndWait(timeout: .seconds(5))
    }
    // --web takes what browsers (and, with --localsend, LocalSend apps) send, never a Ferry
    // sender's files: nothing listens for Ferry peers, nothing is advertised, and the receiver
    // ends with its link (a web link's end is the end).
    let takesFerry = webPage == nil
    let advertising: ReceiveAdvertising?
    let into =
      sink == nil ? "Receiving into \(destination.path)" : "Receiving one file to standard output"
    if takesFerry {
      do {
        try await advertiser.listen()
      } catch {
        throw cliFailure(error)
      }
      let started = ReceiveAdvertising(
        advertiser: advertiser, output: output, displayName: displayName,
        fingerprint: identity.fingerprint, serviceType: serviceType, destination: destination)
      let published = try await started.start()
      advertising = started
      // A message for people: stderr, as every other (only "Saved PATH" lines are stdout).
      output.note(
        into + " as '\(published)' [\(identity.fingerprint.shortDescription)], "
          + "port \(advertiser.port). \(policy.banner) Press Ctrl-C to stop.")
    } else {
      advertising = nil
      output.note(
        into + " from browsers at the web link"
          + (settings.localsend ? " and from LocalSend apps" : " until it expires")
          + " (not from Ferry senders: run ferry receive for them). \(policy.banner) Press "
          + "Ctrl-C to stop.")
    }

    let outcomes = AsyncStream<CLIFailure?>.makeStream()
    let gate = once ? OnceGate() : nil
    let approvals = Approvals()
    let grace = Duration.seconds(settings.resumeGrace)
    let reporter = ReceiveReporter(
      output: output, bar: bar, incoming: incoming,
      gate: gate, outcomes: outcomes.continuation, approvals: approvals, resumeGrace: grace,
      sink: sink)
    Task {
      for await event in session.resourceEvents { reporter.report(event) }
    }
    Task {
      // A link closed on purpose (a GOODBYE, a violation) is not lost: nothing comes back.
      for await change in session.stateChanges where change.state == .notConnected {
        if change.end?.isOnPurpose == true {
          approvals.ended(change.peer.fingerprint)
        } else {
          approvals.linkLost(change.peer.fingerprint)
        }
      }
    }
    let decisions = ReceiveDecisions(
      policy: policy, approvals: approvals, gate: gate,
      options: ReceiveOptions(
        // --stdout: nothing is placed, so nothing is skipped for a name taken.
        destination: destination, conflictPolicy: sink == nil ? settings.onConflict : .rename,
        relocate: sink == nil,
        staleAfter: .seconds(settings.keepPartialDays * 86_400)),
      folder: folder,
      resumeGrace: grace,
      prompt: InvitationPrompt(output: output, bar: reporter.bar, turns: PromptTurns()),
      outcomes: outcomes.continuation, open: open, oneFile: sink != nil)
    Task {
      // Each decided on its own (the advertiser caps how many are pending); the prompt asks
      // one at a time and lists the others as waiting.
      // Discarding: a long-running receiver must not keep every finished decision.
      await withDiscardingTaskGroup { group in
        for await invitation in advertiser.invitations {
          group.addTask { await decisions.decide(invitation, session: session) }
        }
      }
    }
    Task {
      await withDiscardingTaskGroup { group in
        for await offer in session.resourceOffers {
          group.addTask { await decisions.decide(offer) }
        }
      }
    }
    if let advertising { Task { await advertising.follow() } }
    if let localSend {
      localSend.serve(decisions: decisions, reporter: reporter, knownPeers: knownPeers)
      output.note(
        "Also receiving from LocalSend apps on port \(localSend.server.port)"
          + (localSend.discovery == nil ? "." : ", announced on the local network."))
    }
    webPage?.serve(decisions: decisions, reporter: reporter, knownPeers: knownPeers)
    // A web receive ends when its link expires (LocalSend apps, when asked for, go on),
    // once the session already accepted has finished its uploads.
    let endsWithLink = webPage != nil && !settings.localsend
    if let webPage, endsWithLink, let expires = webPage.expires {
      Task {
        try? await Task.sleep(until: expires)
        webPage.stopListening()
        await webPage.server.waitUntilNoSession()
        output.note("The web link expired: stopped receiving.")
        outcomes.continuation.yield(nil)
      }
    }
    for await failure in outcomes.stream where once || endsWithLink {
      advertiser.stop()
      // The last LocalSend or web answer (a file's 200, a text's 204) is written on its
      // connection's thread after the outcome is known: it leaves before the process ends.
      for front in [localSend, webPage].compactMap({ $0 }) {
        front.stopListening()
        await front.server.drain(timeout: .seconds(2))
      }
      // The last FILE_ACKs are on their way: let the sender hang up first (at most 5 s).
      await session.waitUntilDisconnected(timeout: .seconds(5))
      await session.closeAndWait(timeout: .seconds(1))
      if let failure { throw failure }
      return
    }
  }
}

/// `--on-conflict rename|overwrite|skip`: parsed, listed in `--help` and completed by
/// ArgumentParser from the library's cases.
extension ConflictPolicy: ExpressibleByArgument {}
