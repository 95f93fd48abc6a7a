import ArgumentParser
import Ferry
import Foundation

/// `ferry receive`: advertises this machine and receives files, asking first.
struct ReceiveCommand: AsyncParsableCommand {
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

      Files are written to a staging folder inside --dir, verified (SHA-256) and then moved \
      into place; nothing partial ever appears in --dir itself.

      Examples:
        ferry receive
        ferry receive --dir ~/Downloads --name "Kitchen laptop"
        ferry receive --yes --once --json --dir /srv/incoming
        ferry receive --accept-from 9F2C41AB --accept-from 77E0 --dir backups
      """)

  @Option(help: "Where received files go (default: the current directory).")
  var dir: String = "."

  @Flag(help: "Accept every offer without asking.")
  var yes = false

  @Option(
    name: .customLong("accept-from"),
    help: "Accept offers from this fingerprint (prefix allowed; repeatable); decline others.")
  var acceptFrom: [String] = []

  @Flag(help: "Exit after the first accepted offer, with its exit code.")
  var once = false

  @Option(help: "The TCP port to listen on (default: any free port).")
  var port: UInt16 = 0

  @Option(
    name: .customLong("on-conflict"), help: "When a name is taken: rename, overwrite or skip.")
  var onConflict: String = ConflictPolicy.rename.rawValue

  @Option(parsing: .unconditional, help: "The DNS-SD service type to publish (RFC 6335 name).")
  var service: String = ServiceType.ferry.name

  @Option(help: "The name senders see (1-63 bytes of UTF-8). Default: this machine's host name.")
  var name: String?

  @OptionGroup var output: OutputOptions

  func validate() throws {
    do {
      _ = try parseServiceType(service)
    } catch {
      throw ValidationError(error.message)
    }
    if yes && !acceptFrom.isEmpty {
      throw ValidationError("--yes and --accept-from cannot be used together")
    }
    if ConflictPolicy(rawValue: onConflict) == nil {
      throw ValidationError("--on-conflict must be rename, overwrite or skip")
    }
    if !yes && acceptFrom.isEmpty && isatty(0) != 1 {
      throw ValidationError(
        "no terminal to ask on: use --yes to accept every offer, or --accept-from FPR to accept known senders"
      )
    }
  }

  func run() async throws {
    let output = self.output.writer
    let serviceType = try parseServiceType(service)
    let displayName = name ?? ProcessInfo.processInfo.hostName
    let destination = URL(fileURLWithPath: dir).standardizedFileURL
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: destination.path, isDirectory: &isDirectory),
      isDirectory.boolValue
    else {
      throw CLIFailure(
        status: .usage, message: "\(destination.path) is not a directory", code: "invalid-dir")
    }
    let identity = try loadIdentity()
    let knownPeers = KnownPeers()
    let session: Session
    let advertiser: Advertiser
    do {
      session = try Session(identity: identity, displayName: displayName)
      advertiser = try Advertiser(
        identity: identity, displayName: displayName, serviceType: serviceType, port: port,
        knownPeers: knownPeers)
    } catch let error as DiscoveryError {
      throw cliFailure(error)
    } catch {
      throw CLIFailure(status: .usage, message: "\(error)", code: "invalid-name")
    }
    session.receiveResources(
      ReceiveOptions(
        destination: destination, conflictPolicy: ConflictPolicy(rawValue: onConflict)!))
    let incoming = IncomingTransfers()
    Interrupts.onInterrupt {
      advertiser.stop()
      // Cancel what is arriving (the staged bytes stay for a resume), and let the RESETs leave.
      if incoming.cancelAll() > 0 { Thread.sleep(forTimeInterval: 0.2) }
      session.close()
    }
    do {
      try await advertiser.listen()
    } catch {
      throw cliFailure(error)
    }
    let advertising = ReceiveAdvertising(
      advertiser: advertiser, output: output, displayName: displayName,
      fingerprint: identity.fingerprint, serviceType: serviceType, destination: destination)
    let published = try await advertising.start()
    output.say(
      "Receiving into \(destination.path) as '\(published)' [\(identity.fingerprint.shortDescription)], "
        + "port \(advertiser.port). Press Ctrl-C to stop.")

    let outcomes = AsyncStream<Int32>.makeStream()
    let reporter = ReceiveReporter(
      output: output, bar: ProgressBar(enabled: self.output.showsProgress), incoming: incoming,
      outcomes: outcomes.continuation)
    Task {
      for await event in session.resourceEvents { reporter.report(event) }
    }
    let prompt = InvitationPrompt(output: output, bar: reporter.bar)
    Task {
      for await invitation in advertiser.invitations {
        await decide(invitation, session: session, prompt: prompt)
      }
    }
    Task { await advertising.follow() }
    for await status in outcomes.stream where once {
      advertiser.stop()
      // The last FILE_ACKs are on their way: let the sender hang up first (at most 5 s).
      await waitUntilAlone(session, timeout: .seconds(5))
      session.close()
      if status != 0 {
        throw CLIFailure(
          status: .transferFailed, message: "some files were not received", code: "transfer-failed")
      }
      return
    }
  }

  /// Accepts or declines one invitation: --yes, --accept-from, or the prompt.
  private func decide(_ invitation: Invitation, session: Session, prompt: InvitationPrompt) async {
    let output = prompt.output
    // Invitations are asked about one at a time; one that waited behind another prompt may
    // have been withdrawn meanwhile.
    guard invitation.isPending else {
      output.event("withdrawn", [("peer", .string(invitation.peer.displayName))])
      prompt.bar.above {
        output.note("\(invitation.peer) gave up waiting before it could be asked about.")
      }
      return
    }
    let summary = OfferSummary.decode(invitation.context)
    prompt.announce(invitation, summary: summary)
    let accept: Bool
    var reason = "declined by the receiver"
    if yes {
      accept = true
    } else if !acceptFrom.isEmpty {
      accept = acceptFrom.contains { invitation.fingerprint.hasPrefix($0) }
      reason = "not an accepted sender"
    } else {
      switch await prompt.ask(invitation, summary: summary) {
      case .yes: accept = true
      case .no: accept = false
      case .noAnswer:
        accept = false
        reason = "no answer at the receiver"
      case .withdrawn:
        output.event("withdrawn", [("peer", .string(invitation.peer.displayName))])
        return
      }
    }
    guard accept else {
      invitation.decline(reason: reason)
      output.event(
        "declined", [("peer", .string(invitation.peer.displayName)), ("reason", .string(reason))])
      prompt.bar.above { output.note("Declined \(invitation.peer) (\(reason)).") }
      return
    }
    do {
      try await invitation.accept(into: session)
      output.event("accepted", [("peer", .string(invitation.peer.displayName))])
      prompt.bar.above {
        output.note(
          "Accepted \(invitation.peer), verification code \(invitation.verificationCode).")
      }
    } catch {
      output.event(
        "error",
        [
          ("peer", .string(invitation.peer.displayName)), ("code", .string("accept-failed")),
          ("message", .string(error.description)),
        ])
      prompt.bar.above { output.note("Could not accept \(invitation.peer): \(error)") }
    }
  }
}

/// Untrusted text made safe for a terminal: control characters escaped, length capped.
func printable(_ text: String) -> String {
  let shown = text.unicodeScalars.map {
    $0.properties.generalCategory == .control ? "\\u{\(String($0.value, radix: 16))}" : String($0)
  }.joined()
  return shown.count > 200 ? String(shown.prefix(200)) + "…" : shown
}

/// Waits until no peer is connected to `session` any more, or `timeout` passes.
func waitUntilAlone(_ session: Session, timeout: Duration) async {
  let deadline = ContinuousClock.now + timeout
  while !session.connectedPeers.isEmpty && ContinuousClock.now < deadline {
    try? await Task.sleep(for: .milliseconds(20))
  }
}
