import ArgumentParser
import Ferry
import Foundation

/// `ferry send PATH...`: sends files and folders to a nearby receiver.
struct SendCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "send",
    abstract: "Send files and folders to a nearby machine running 'ferry receive'.",
    discussion: """
      Finds receivers through mDNS (or connects to --address), asks them to accept, shows the \
      verification code to compare with the receiver's screen, and sends. Folders keep their \
      layout. Re-running an interrupted send resumes where it stopped.

      Exit codes: 0 delivered, 1 a file failed, 2 bad input, 3 no receiver found or timed out, \
      4 declined, 5 authentication failed, 6 no avahi-daemon, 130 interrupted.

      Examples:
        ferry send photo.jpg
        ferry send --to "Kitchen laptop" ~/Pictures/trip
        ferry send --address 192.168.1.20:52000 --to 9F2C41AB report.pdf
        ferry send --json --to desk *.log | jq -c 'select(.event == "done")'
      """)

  @Argument(help: "Files and folders to send.")
  var paths: [String] = []

  @Option(name: .long, help: "The receiver: its name, or a prefix of its fingerprint.")
  var to: String?

  @Option(help: "Connect to HOST:PORT directly instead of discovering.")
  var address: String?

  @Option(help: "Seconds to wait for discovery and acceptance together.")
  var timeout: Double = 60

  @Option(parsing: .unconditional, help: "The DNS-SD service type (RFC 6335 name).")
  var service: String = ServiceType.ferry.name

  @Option(help: "The name the receiver sees. Default: this machine's host name.")
  var name: String?

  @Flag(help: "Write one JSON object per line to stdout.")
  var json = false

  func validate() throws {
    if paths.isEmpty { throw ValidationError("give at least one file or folder to send") }
    if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
  }

  func run() async throws {
    let output = EventWriter(json: json)
    let serviceType = try parseServiceType(service)
    let items: [ResourceItem]
    do {
      items = try ResourceItem.expanding(paths.map { URL(fileURLWithPath: $0) })
    } catch {
      throw CLIFailure(status: .usage, message: error.description, code: "cannot-read")
    }
    guard !items.isEmpty else {
      throw CLIFailure(
        status: .usage, message: "nothing to send: the folders are empty", code: "empty")
    }
    let identity = try loadIdentity()
    let session: Session
    do {
      session = try Session(
        identity: identity, displayName: name ?? ProcessInfo.processInfo.hostName)
    } catch {
      throw CLIFailure(status: .usage, message: error.description, code: "invalid-name")
    }
    // Until the transfer starts, an interrupt closes the session (withdrawing an invitation).
    Interrupts.onInterrupt { session.close() }
    let deadline = ContinuousClock.now + .seconds(timeout)
    let sizes = items.map { item -> (String, UInt64) in
      var status = stat()
      return (item.path, stat(item.url.path, &status) == 0 ? UInt64(status.st_size) : 0)
    }
    let summary = OfferSummary(items: sizes.map { (path: $0.0, size: $0.1) })

    let peer = try await connect(
      session: session, serviceType: serviceType, deadline: deadline, summary: summary,
      output: output)
    let transfer: ResourceTransfer
    do {
      transfer = try session.sendResources(items, to: peer)
    } catch {
      throw CLIFailure(status: .transferFailed, message: error.description, code: "transfer-failed")
    }
    Interrupts.onInterrupt {
      transfer.cancel()
      // Let the RESET reach the receiver before the connection closes, so it reports a cancel
      // rather than a vanished sender.
      Thread.sleep(forTimeInterval: 0.2)
      session.close()
      Thread.sleep(forTimeInterval: 0.1)
    }
    let bar = ProgressBar(enabled: !json && StandardStream.error.isTerminal)
    let reporter = Task {
      for await snapshot in transfer.progress.snapshots {
        bar.draw(snapshot)
        output.event(
          "progress",
          [
            ("bytes", .int(Int(snapshot.bytes))), ("total", .int(Int(snapshot.total))),
            ("bytes_per_second", .int(Int(snapshot.bytesPerSecond))),
            ("files_done", .int(snapshot.filesDone)), ("files", .int(snapshot.fileCount)),
          ])
      }
    }
    do {
      let results = try await transfer.result()
      await reporter.value
      bar.finish()
      for result in results {
        output.event(
          "file-done", [("path", .string(result.path)), ("status", .string("\(result.status)"))])
      }
      let stored = results.filter { $0.status == .stored }.count
      output.event(
        "done",
        [
          ("files", .int(results.count)), ("stored", .int(stored)),
          ("bytes_sent", .int(Int(transfer.bytesSent))),
        ])
      output.note(
        "Sent \(stored) of \(results.count) file(s), \(formatBytes(summary.bytes)) to \(peer.displayName)"
          + (transfer.bytesSent < summary.bytes
            ? " (resumed: \(formatBytes(transfer.bytesSent)) sent)." : "."))
      session.close()
    } catch {
      bar.finish()
      session.close()
      switch error {
      case .cancelledByPeer(let reason):
        throw CLIFailure(
          status: .transferFailed, message: "the receiver stopped the transfer: \(reason)",
          code: "cancelled")
      default:
        throw CLIFailure(
          status: .transferFailed, message: error.description, code: "transfer-failed")
      }
    }
  }

  /// Finds (or addresses) the receiver and gets the invitation accepted.
  private func connect(
    session: Session, serviceType: ServiceType, deadline: ContinuousClock.Instant,
    summary: OfferSummary, output: EventWriter
  ) async throws(CLIFailure) -> PeerID {
    let remaining = { () -> Duration in max(.milliseconds(100), deadline - ContinuousClock.now) }
    do {
      if let address {
        let (host, port) = try parseAddress(address)
        let expected = to.flatMap { try? Fingerprint(parsing: $0) }
        output.note("Connecting to \(address)…")
        let peer = try await session.invite(
          host: host, port: port, expecting: expected, context: summary.encoded,
          timeout: remaining())
        if let to, expected == nil, !peer.fingerprint.hasPrefix(to), peer.displayName != to {
          session.disconnect(peer)
          throw CLIFailure(
            status: .authentication,
            message: "\(address) is \(peer), which is not '\(to)'", code: "fingerprint-mismatch")
        }
        announce(peer, session: session, output: output)
        return peer
      }
      let browser: Browser
      do {
        browser = try Browser(serviceType: serviceType)
      } catch {
        throw cliFailure(error)
      }
      defer { browser.stop() }
      output.note(to.map { "Looking for '\($0)'…" } ?? "Looking for receivers…")
      let target = try await findTarget(browser, deadline: deadline)
      output.event("peer-found", peerFields(target))
      output.note(
        "Asking \(target.peerID?.description ?? target.name) to accept; verification code "
          + "\(VerificationCode(session.myPeer.fingerprint, target.info.fingerprint!))")
      output.event("invited", [("peer", .string(target.name))])
      let peer = try await browser.invite(
        target, to: session, context: summary.encoded, timeout: remaining())
      announce(peer, session: session, output: output)
      return peer
    } catch let error as CLIFailure {
      throw error
    } catch let error as InvitationError {
      switch error {
      case .declined(let reason):
        output.event("declined", [("reason", .string(reason))])
        throw CLIFailure(status: .declined, message: error.description, code: "declined")
      case .authenticationFailed:
        throw CLIFailure(
          status: .authentication, message: error.description, code: "authentication")
      case .timedOut, .unreachable, .busy, .expired:
        throw CLIFailure(status: .noPeer, message: error.description, code: "no-peer")
      default:
        throw CLIFailure(
          status: .transferFailed, message: error.description, code: "invitation-failed")
      }
    } catch {
      throw CLIFailure(status: .transferFailed, message: "\(error)", code: "invitation-failed")
    }
  }

  private func announce(_ peer: PeerID, session: Session, output: EventWriter) {
    let code = session.verificationCode(with: peer)
    output.event(
      "accepted",
      [
        ("peer", .string(peer.displayName)), ("fingerprint", .string(peer.fingerprint.hexString)),
        ("code", .string(code.digits)),
      ])
    output.note("\(peer) accepted (verification code \(code)).")
  }

  /// The one receiver that matches `--to` (or the only one found, without it).
  private func findTarget(_ browser: Browser, deadline: ContinuousClock.Instant) async throws
    -> DiscoveredPeer
  {
    let wanted = to
    if let wanted {
      do {
        return try await browser.firstPeer(timeout: deadline - .now) { peer in
          peer.name == wanted || peer.info.fingerprint?.hasPrefix(wanted) == true
        }
      } catch {
        throw CLIFailure(
          status: .noPeer, message: "no receiver '\(wanted)' found on \(browser.serviceType)",
          code: "no-peer")
      }
    }
    // Without --to: wait for the first, then a moment for others.
    _ = try? await browser.firstPeer(timeout: deadline - .now) { _ in true }
    try? await Task.sleep(for: .milliseconds(700))
    let found = browser.peers.filter { $0.peerID != nil }
    switch found.count {
    case 0:
      throw CLIFailure(
        status: .noPeer, message: "no receiver found on \(browser.serviceType)", code: "no-peer")
    case 1:
      return found[0]
    default:
      let list = found.map { "  \($0.name)  [\($0.info.fingerprint!.shortDescription)]" }.joined(
        separator: "\n")
      throw CLIFailure(
        status: .noPeer, message: "several receivers found; choose one with --to NAME:\n\(list)",
        code: "several-peers")
    }
  }
}

/// Parses `HOST:PORT` (`[v6]:PORT` for IPv6).
func parseAddress(_ text: String) throws(CLIFailure) -> (String, UInt16) {
  var host = Substring(text)
  guard let colon = host.lastIndex(of: ":"), let port = UInt16(host[host.index(after: colon)...]),
    port > 0
  else {
    throw CLIFailure(
      status: .usage, message: "--address wants HOST:PORT, not \"\(text)\"", code: "invalid-address"
    )
  }
  host = host[..<colon]
  if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
  return (String(host), port)
}
