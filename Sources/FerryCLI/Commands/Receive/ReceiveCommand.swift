import ArgumentParser
import Ferry
import FerryAgent
import FerryDaemon
import Foundation
import ServiceLifecycle

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

  @Option(
    help: "The TCP port to listen on (default: the last receiver's port when free, else any).")
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
    // A daemon receiving for this user already answers senders: said, rather than competing
    // with it for them and for its ports. (A web link is a receive of its own.)
    if !web.enabled, let status = await DaemonProbe.running(socket: nil) {
      throw DaemonProbe.receivingAlready(status)
    }
    // (Its socket may be elsewhere — a system unit's — but its home is this one.)
    if !web.enabled, let pid = DaemonLock.holder(in: FerryHome.defaultDirectory) {
      throw DaemonProbe.receivingAlready(pid: pid)
    }
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
    // --web takes what browsers (and, with --localsend, LocalSend apps) send, never a Ferry
    // sender's files: nothing listens for Ferry peers, nothing is advertised, and the receiver
    // ends with its link (a web link's end is the end).
    let takesFerry = !web.enabled
    var ferry: (session: Session, advertiser: Advertiser)?
    if takesFerry {
      do {
        // Files only: messages and streams nobody here reads are refused, not buffered.
        let session = try Session(identity: identity, displayName: displayName, accepting: [])
        let advertiser = try Advertiser(
          identity: identity, displayName: displayName, serviceType: serviceType, port: port,
          knownPeers: knownPeers)
        // Every offer is decided by the receiver, on its real files: consent binds to what is
        // written.
        session.askAboutResourceOffers()
        ferry = (session, advertiser)
      } catch let error as DiscoveryError {
        throw cliFailure(error)
      } catch {
        throw CLIFailure(status: .usage, message: "\(error)", code: .invalidName)
      }
    }
    let bar = ProgressBar(enabled: self.output.showsProgress)
    let localSend =
      settings.localsend
      ? try await LocalSendReceiving.start(
        self.localSend, identity: identity, displayName: displayName, output: output) : nil
    let webPage =
      web.enabled
      ? try await WebReceiving.start(
        web, identity: identity, displayName: displayName, output: output) : nil
    if let ferry {
      do {
        let preferred = port == 0 ? LastPort.read() : nil
        LastPort.record(
          try await ferry.advertiser.listen(preferring: preferred), preferred: preferred)
      } catch {
        localSend?.stopListening()
        throw cliFailure(error)
      }
    }
    var frontEnds: [Receiver.FrontEnd] = []
    if let ferry { frontEnds.append(.ferry(ferry.session, ferry.advertiser)) }
    if let localSend { frontEnds.append(localSend.frontEnd) }
    // A web receive ends when its link expires (LocalSend apps, when asked for, go on), once
    // the session already accepted has finished its uploads.
    if let webPage {
      frontEnds.append(.web(webPage.server, endsAt: settings.localsend ? nil : webPage.expires))
    }
    let prompt = InvitationPrompt(output: output, bar: bar, turns: PromptTurns())
    let receiver = Receiver(
      Receiver.Configuration(
        options: ReceiveOptions(
          // --stdout: nothing is placed, so nothing is skipped for a name taken.
          destination: destination, conflictPolicy: sink == nil ? settings.onConflict : .rename,
          relocate: sink == nil,
          staleAfter: .seconds(settings.keepPartialDays * 86_400)),
        resumeGrace: .seconds(settings.resumeGrace), once: once, oneFile: sink != nil),
      decider: settings.canAsk ? policy.asking(prompt) : policy, knownPeers: knownPeers,
      frontEnds: frontEnds)
    let into =
      sink == nil ? "Receiving into \(destination.path)" : "Receiving one file to standard output"
    let alsoLocalSend = localSend.map {
      "Also receiving from LocalSend apps on port \($0.server.port)"
        + ($0.discovery == nil ? "." : ", announced on the local network.")
    }
    let reporter = ReceiveReporter(
      output: output, bar: bar, incoming: IncomingTransfers(), sink: sink,
      advertised: ferry.map {
        ReceiveReporter.Advertised(
          into: into, destination: destination, fingerprint: identity.fingerprint,
          serviceType: serviceType, port: $0.advertiser.port, policy: policy.banner)
      }, afterBanner: alsoLocalSend.map { [$0] } ?? [])
    // The receiver is a service of its own group, shut down gracefully on SIGINT and SIGTERM
    // (Interrupts catches them: a signal before the group's own handlers were armed would be
    // lost) — and it ends the group when it ends (--once, a web link's end).
    let services = ServiceGroup.receiving(receiver, label: "ferry.receive")
    let reported = Latch()
    Interrupts.onInterrupt {
      // What had arrived stays on screen; the cancels below draw nothing over it.
      bar.stop()
      sink?.removePrivateFolder()
      // Senders waiting on a question hear a decline; what is arriving is cancelled (the
      // staged bytes stay for a resume), each reported before the process ends.
      await services.triggerGracefulShutdown()
      await receiver.stop()
      await reported.wait()
    }
    if ferry == nil {
      output.note(
        into + " from browsers at the web link"
          + (settings.localsend ? " and from LocalSend apps" : " until it expires")
          + " (not from Ferry senders: run ferry receive for them). \(policy.banner) Press "
          + "Ctrl-C to stop.")
      if let alsoLocalSend { output.note(alsoLocalSend) }
    }
    let running = Task { try await services.run() }
    for await event in receiver.events { reporter.report(event) }
    reported.open()
    if case .failure(let error) = await running.result {
      if case .advertising(let error) = error as? Receiver.Failure { throw cliFailure(error) }
      throw CLIFailure(status: .transferFailed, message: "\(error)", code: .transferFailed)
    }
    if let failure = reporter.failure { throw failure }
  }
}

/// `--on-conflict rename|overwrite|skip`: parsed, listed in `--help` and completed by
/// ArgumentParser from the library's cases.
extension ConflictPolicy: ExpressibleByArgument {}
