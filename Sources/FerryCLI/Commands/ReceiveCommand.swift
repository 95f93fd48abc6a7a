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
      two is required.

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

  @Flag(help: "Write one JSON object per line to stdout.")
  var json = false

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
    let output = EventWriter(json: json)
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
    Interrupts.onInterrupt {
      advertiser.stop()
      session.close()
    }
    let published: String
    do {
      published = try await advertiser.start()
    } catch {
      throw cliFailure(error)
    }
    if published != displayName {
      output.event("renamed", [("from", .string(displayName)), ("to", .string(published))])
      output.note(
        "The name '\(displayName)' is taken on the network; advertising as '\(published)'.")
    }
    output.event(
      "advertising",
      [
        ("name", .string(published)), ("fingerprint", .string(identity.fingerprint.hexString)),
        ("service", .string(serviceType.dnsSDType)), ("port", .int(Int(advertiser.port))),
        ("dir", .string(destination.path)),
      ])
    output.say(
      "Receiving into \(destination.path) as '\(published)' [\(identity.fingerprint.shortDescription)], "
        + "port \(advertiser.port). Press Ctrl-C to stop.")

    let outcomes = AsyncStream<Int32>.makeStream()
    Task {
      for await event in session.resourceEvents {
        report(event, output: output, outcomes: outcomes.continuation)
      }
    }
    Task {
      for await invitation in advertiser.invitations {
        await decide(invitation, session: session, output: output)
      }
    }
    Task { await follow(advertiser, output: output) }
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

  /// Reports later renames and avahi-daemon restarts (the first rename is reported at start).
  private func follow(_ advertiser: Advertiser, output: EventWriter) async {
    var initialRegistration = true
    for await event in advertiser.events {
      switch event {
      case .published:
        initialRegistration = false
      case .renamed where initialRegistration:
        break
      case .renamed(let from, let to):
        output.event("renamed", [("from", .string(from)), ("to", .string(to))])
        output.note("The name '\(from)' is taken on the network; advertising as '\(to)'.")
      case .daemonDisconnected(let reason):
        output.event("discovery-interrupted", [("reason", .string(reason))])
        output.note("avahi-daemon went away (\(reason)); advertising again when it returns.")
      case .failed(let error):
        output.event("discovery-failed", [("message", .string(error.description))])
        output.note("Advertising failed: \(error). Senders can still use --address.")
      }
    }
  }

  /// Accepts or declines one invitation: --yes, --accept-from, or the prompt.
  private func decide(_ invitation: Invitation, session: Session, output: EventWriter) async {
    let summary = OfferSummary.decode(invitation.context)
    let status: String
    switch invitation.status {
    case .known(let trusted): status = trusted ? "trusted" : "known"
    case .new: status = "new"
    case .changedKey: status = "KEY CHANGED"
    }
    output.event(
      "invitation",
      [
        ("peer", .string(invitation.peer.displayName)),
        ("fingerprint", .string(invitation.fingerprint.hexString)), ("status", .string(status)),
        ("code", .string(invitation.verificationCode.digits)),
        ("files", summary.map { .int($0.files) } ?? .null),
        ("bytes", summary.map { .int(Int($0.bytes)) } ?? .null),
      ])
    if case .changedKey(let previous) = invitation.status {
      output.note(
        "WARNING: KEY CHANGED. '\(invitation.peer.displayName)' is known with another key "
          + "(\(previous.shortDescription)); this one is \(invitation.fingerprint.shortDescription). "
          + "It may be someone else using that name.")
    }
    let accept: Bool
    if yes {
      accept = true
    } else if !acceptFrom.isEmpty {
      accept = acceptFrom.contains { invitation.fingerprint.hasPrefix($0) }
    } else {
      accept = await prompt(invitation, summary: summary, status: status)
    }
    guard accept else {
      let reason = acceptFrom.isEmpty ? "declined by the receiver" : "not an accepted sender"
      invitation.decline(reason: reason)
      output.event("declined", [("peer", .string(invitation.peer.displayName))])
      output.note("Declined \(invitation.peer).")
      return
    }
    do {
      try await invitation.accept(into: session)
      output.event("accepted", [("peer", .string(invitation.peer.displayName))])
      output.note("Accepted \(invitation.peer), verification code \(invitation.verificationCode).")
    } catch {
      output.note("Could not accept \(invitation.peer): \(error)")
    }
  }

  /// Asks on the terminal; no answer before the invitation expires means no.
  private func prompt(_ invitation: Invitation, summary: OfferSummary?, status: String) async
    -> Bool
  {
    var lines = [
      "",
      "\(invitation.peer.displayName) [\(invitation.fingerprint.shortDescription)] (\(status)) wants to send",
    ]
    if let summary {
      let names = summary.names.map { "  " + printable($0) }
      lines.append("\(summary.files) file(s), \(formatBytes(summary.bytes)):")
      lines += names
      if summary.files > names.count { lines.append("  … and \(summary.files - names.count) more") }
    }
    lines.append(
      "Verification code: \(invitation.verificationCode) (compare with the sender's screen)")
    StandardStream.error.write(lines.joined(separator: "\n") + "\nAccept? [y/N] ")
    let remaining = invitation.expiresAt - .now
    let answer = await TerminalInput.shared.nextLine(timeout: remaining)
    if answer == nil { StandardStream.error.write("\n(no answer: declined)\n") }
    return ["y", "yes"].contains(answer?.trimmingCharacters(in: .whitespaces).lowercased() ?? "")
  }

  private func report(
    _ event: ResourceEvent, output: EventWriter, outcomes: AsyncStream<Int32>.Continuation
  ) {
    switch event {
    case .finished(let name, _, .success(let url)):
      output.event(
        "file-done", [("path", .string(name)), ("saved", url.map { .string($0.path) } ?? .null)])
      output.say(url.map { "Saved \($0.path)" } ?? "Skipped \(printable(name)) (name taken)")
    case .finished(let name, _, .failure(let error)):
      output.event("error", [("path", .string(name)), ("message", .string(error.description))])
      output.note("\(printable(name)): \(error)")
    case .offerFinished(let transfer, let error):
      output.event(
        "done",
        [
          ("peer", .string(transfer.peer.displayName)), ("files", .int(transfer.files.count)),
          ("error", error.map { .string($0.description) } ?? .null),
        ])
      if let error { output.note("Transfer from \(transfer.peer.displayName) ended: \(error)") }
      outcomes.yield(error == nil ? 0 : 1)
    default:
      break
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
