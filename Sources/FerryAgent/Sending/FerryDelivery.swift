import Ferry
import Foundation
import Synchronization

/// One receiver's part of a `ferry send`: the invitation, the transfer and what is reported about
/// them. Several run at once when `--to` is repeated; each ends in an outcome of its own.
struct Delivery: Sendable {
  let session: Session
  /// The files (nil for `--text`).
  let batch: SendBatch?
  /// What the invitation announces.
  let summary: OfferSummary
  let output: EventWriter
  let bar: ProgressBar
  let active: ActiveTransfers
  let deadline: ContinuousClock.Instant
  let keys: KeyCheck
  /// When a dropped link is tried again (`--retry-for`).
  let retry: RetryPolicy
  /// The digest each file is checked with (`--checksum`).
  let checksum: ChecksumAlgorithm

  /// The longest an invitation made again after a drop may take to be answered (less when
  /// `--retry-for` has less time left).
  static let reinviteTimeout: Duration = .seconds(30)

  /// How long a receiver found through discovery has to answer a TCP connect, at all its
  /// addresses at once, before it is invited.
  static let answerTimeout: Duration = .seconds(3)

  private var remaining: Duration { max(.milliseconds(100), deadline - .now) }

  /// Invites and sends to a receiver found through discovery; `pinned` when `--to` named its
  /// fingerprint.
  func send(to target: DiscoveredPeer, browser: Browser, pinned: Bool = false) async
    -> CLIFailure?
  {
    output.emit(PeerSeen(target), as: .peerFound)
    // mDNS lists a receiver whose machine or link went until its records expire (minutes): a
    // receiver that answers at none of its addresses is given up on now, and one that answers
    // is invited at the addresses that did.
    let answering = await target.answeringAddresses(within: min(Self.answerTimeout, remaining))
    guard !answering.isEmpty else {
      let addresses = target.addresses.map { $0.hostPortString(port: target.port) }
        .joined(separator: ", ")
      let seconds = Int(Self.answerTimeout.inSeconds)
      return CLIFailure(
        status: .noPeer,
        message: "\(printable(target.name)) is listed on the network but does not answer at "
          + "\(addresses) within \(seconds) s: it may be switched off or its network down "
          + "(mDNS lists it until its records expire)",
        code: .noPeer)
    }
    // Standard input sent as it is read needs version 5: said before anyone is asked there,
    // with nothing of it read yet.
    if let version = target.info.protocolVersion, version < 5,
      batch?.entries.contains(where: \.isStreamed) == true
    {
      return CLIFailure(
        status: .usage,
        message:
          "\(printable(target.name)) runs an older Ferry (protocol \(version)), which cannot "
          + "take standard input as it is read: update it, or save standard input to a file and "
          + "send that",
        code: .usage)
    }
    let reachable = DiscoveredPeer(
      name: target.name, serviceType: target.serviceType, domain: target.domain,
      hostName: target.hostName, port: target.port, addresses: answering, info: target.info)
    // Its key is proven in the TLS handshake to be the advertised one; check that key first.
    if let peer = target.peerID,
      let refused = await keys.confirm(peer, pinned: pinned, timeout: remaining)
    {
      return refused
    }
    // The code is the connection's: shown once the receiver is asked, whatever it answers.
    let shown = codeShower(label: target.name, at: nil)
    return await deliver(label: target.name) { () async throws(InvitationError) -> PeerID in
      try await browser.invite(
        reachable, to: session, context: summary.encoded, timeout: remaining,
        onVerificationCode: shown)
    } reconnect: { [session, summary] fingerprint, left async throws(InvitationError) -> PeerID in
      // The same receiver, found again by its key (its address or port may have changed).
      guard let found = browser.peers.first(where: { $0.info.fingerprint == fingerprint }) else {
        throw .unreachable(address: "", reason: "it is not on the network now")
      }
      return try await browser.invite(
        found, to: session, context: summary.encoded, timeout: min(left, Self.reinviteTimeout),
        onVerificationCode: shown)
    }
  }

  /// Invites and sends to the receiver at `address`. `to` (the `--to` text and what it means)
  /// must match it: a key is pinned inside the TLS handshake, so a receiver with another key
  /// never sees the invitation; a name is checked once connected (and its key against what
  /// this machine knows, before any file).
  func send(toAddress address: String, to: (text: String, reference: PeerReference)?) async
    -> CLIFailure?
  {
    let host: String
    let port: UInt16
    do {
      (host, port) = try parseAddress(address)
    } catch {
      return error
    }
    output.note("Connecting to \(address)…")
    let pinsKey = to?.reference.isKey ?? false
    // Shown as soon as the receiver is asked, before its answer: also when it declines, and
    // before any check of who it is (the code is what the user checks it with).
    let shown = codeShower(label: address, at: address)
    return await deliver(label: address, checkKey: !pinsKey) {
      () async throws(InvitationError) -> PeerID in
      let peer: PeerID
      switch to?.reference {
      case .fingerprint(let expected):
        peer = try await session.invite(
          host: host, port: port, expecting: expected, context: summary.encoded,
          timeout: remaining, onVerificationCode: shown)
      case .prefix(let prefix):
        peer = try await session.invite(
          host: host, port: port, fingerprintPrefix: prefix, context: summary.encoded,
          timeout: remaining, onVerificationCode: shown)
      case .name, .nickname, nil:
        peer = try await session.invite(
          host: host, port: port, context: summary.encoded, timeout: remaining,
          onVerificationCode: shown)
      }
      if let to, !to.reference.isKey, !to.reference.matchesFingerprint(peer.fingerprint),
        !to.reference.matchesName(peer.displayName)
      {
        session.disconnect(peer)
        throw .authenticationFailed(
          reason: "\(address) is \(peer), which is not '\(DisplayText.escaping(to.text))'")
      }
      return peer
    } reconnect: { [session, summary] fingerprint, left async throws(InvitationError) -> PeerID in
      // The same address, and the key the first connection proved.
      try await session.invite(
        host: host, port: port, expecting: fingerprint, context: summary.encoded,
        timeout: min(left, Self.reinviteTimeout), onVerificationCode: shown)
    }
  }

  /// What shows an invitation's verification code the moment the receiver is asked (before it
  /// answers, whatever the answer): a note, and the `invited` event with the code. Each
  /// connection has a code of its own, so a reconnection shows its new one. `address`: the
  /// `--address` the receiver was reached at, named beside the peer it turned out to be.
  private func codeShower(label: String, at address: String?)
    -> @Sendable (PeerID, VerificationCode) -> Void
  {
    { [output, bar] peer, code in
      let whom = address.map { "\(peer) at \($0)" } ?? printable(label)
      bar.above { output.note("Asking \(whom) to accept; verification code \(code)") }
      output.emit(Invited(peer: label, code: code.digits))
    }
  }

  /// Gets the invitation accepted, then sends the offer and reports it. `checkKey`: confirm a
  /// changed key (``KeyCheck``) once the peer is known, before sending.
  private func deliver(
    label: String, checkKey: Bool = false, invite: () async throws(InvitationError) -> PeerID,
    reconnect: @escaping @Sendable (Fingerprint, Duration) async throws(InvitationError) -> PeerID
  ) async -> CLIFailure? {
    let peer: PeerID
    do {
      peer = try await invite()
    } catch {
      let failure = Self.failure(error, label: label)
      if case .declined(let reason) = error {
        output.emit(Declined(peer: label, reason: reason))
      }
      return failure
    }
    let code = session.verificationCode(with: peer)
    output.emit(
      SendAccepted(
        peer: peer.displayName, fingerprint: peer.fingerprint.hexString, code: code?.digits))
    bar.above {
      output.note("\(peer) accepted" + (code.map { " (verification code \($0))." } ?? "."))
    }
    if checkKey, let refused = await keys.confirm(peer, pinned: false, timeout: remaining) {
      session.disconnect(peer)
      return refused
    }
    keys.remember(peer)
    if let text = summary.text {
      // The text travelled in the invitation; accepted is delivered.
      output.emit(
        SendDone(
          peer: peer.displayName, files: 0, folders: 0, bytes: 0, stored: 0, identical: 0,
          bytesSent: text.utf8.count, unreadable: 0))
      output.say(
        "Sent the text (\(Quantity.count(text.count, "character"))) to \(peer.displayName).")
      session.disconnect(peer)
      return nil
    }
    return await transfer(to: peer) { left async throws(InvitationError) -> PeerID in
      try await reconnect(peer.fingerprint, left)
    }
  }

  /// Sends the batch to `peer`, part after part (one offer each), trying again as ``retry``
  /// says when the link drops; one progress total for the whole batch.
  private func transfer(
    to peer: PeerID,
    reconnect: @escaping @Sendable (Duration) async throws(InvitationError) -> PeerID
  ) async -> CLIFailure? {
    guard var parts = batch?.parts() else { return nil }
    let started = ContinuousClock.now
    let label = peer.displayName
    // The link a reconnect made is the one the next part goes on.
    let target = Mutex(peer)
    var totals = Totals()
    while true {
      let part: [ResourceItem]
      do {
        guard let next = try parts.next() else { break }
        part = next
      } catch {
        bar.remove(label)
        return report(peer, error)
      }
      let outcome = await send(part, to: target.withLock { $0 }, totals: &totals) {
        left async throws(InvitationError) -> PeerID in
        let again = try await reconnect(left)
        target.withLock { $0 = again }
        return again
      }
      if let failure = outcome {
        bar.remove(label)
        return failure
      }
    }
    bar.remove(label)
    output.emit(
      SendDone(
        peer: label, files: totals.files - totals.folders, folders: totals.folders,
        bytes: Int(summary.bytes + totals.streamed), stored: totals.stored,
        identical: totals.identical, bytesSent: Int(totals.sent), unreadable: parts.unreadable))
    let line = TransferSummary.sent(
      files: totals.files, folders: totals.folders, stored: totals.stored,
      identical: totals.identical,
      total: summary.bytes + totals.streamed, sent: totals.sent, to: peer.displayName,
      took: ContinuousClock.now - started)
    bar.above { output.note(line) }
    // Like rsync's exit 23: the rest was sent, but not everything asked for.
    guard parts.unreadable == 0 else {
      return CLIFailure(
        status: .partial,
        message: "\(peer.displayName) got the rest, but not "
          + "\(Quantity.count(parts.unreadable, "unreadable path")) (left out above)",
        code: .unreadable)
    }
    return nil
  }

  /// What the parts sent so far add up to.
  private struct Totals {
    /// Files settled (every verdict), and their bytes: where the next part's progress starts.
    var files = 0
    var bytes: UInt64 = 0
    var stored = 0
    var identical = 0
    /// Of ``files``, the empty folders (counted apart in the summary, as the prompt counts them).
    var folders = 0
    /// File bytes that went over the wire, every attempt of every part.
    var sent: UInt64 = 0
    /// Bytes of streamed files (standard input), which the summary could not count.
    var streamed: UInt64 = 0
  }

  /// Sends one part (one offer), reporting its files and progress within the batch's.
  private func send(
    _ part: [ResourceItem], to peer: PeerID, totals: inout Totals,
    reconnect: @escaping @Sendable (Duration) async throws(InvitationError) -> PeerID
  ) async -> CLIFailure? {
    let label = peer.displayName
    var current: (transfer: ResourceTransfer, reporter: Task<Void, Never>)?
    var interrupted = false
    /// File bytes the attempts before the current one sent.
    var sentEarlier: UInt64 = 0
    let before = (files: totals.files, bytes: totals.bytes)
    let outcome: Result<[FileResult], RetriedSendError>
    do throws(RetriedSendError) {
      outcome = .success(
        try await session.sendResources(
          part, to: peer, checksum: checksum, retrying: retry, reconnect: reconnect
        ) { event in
          switch event {
          case .sending(let transfer, let attempt):
            guard active.add(transfer) else {
              interrupted = true
              return transfer.cancel()
            }
            if attempt > 1 {
              output.emit(Resumed(peer: label, attempt: attempt))
              bar.above { output.note("Reconnected to \(peer.displayName); resuming.") }
            }
            current = (
              transfer,
              Task { [summary] in
                for await snapshot in transfer.progress.snapshots {
                  output.progress(
                    snapshot.within(
                      files: before.files, bytes: before.bytes, of: summary), peer: label, bar: bar)
                }
              }
            )
          case .retrying(let attempt, let delay, let reason):
            if let (transfer, _) = current {
              current = nil
              sentEarlier += transfer.bytesSent
              active.remove(transfer)
            }
            let seconds = delay.inSeconds
            output.emit(
              Retrying(
                peer: label, attempt: attempt, delay: (seconds * 10).rounded() / 10,
                reason: reason))
            bar.above {
              output.note(
                "Lost \(peer.displayName) (\(reason)); reconnecting in "
                  + "\(String(format: "%.1f", seconds)) s…")
            }
          }
        })
    } catch {
      outcome = .failure(error)
    }
    totals.sent += sentEarlier + (current?.transfer.bytesSent ?? 0)
    if let (transfer, reporter) = current {
      await reporter.value
      active.remove(transfer)
      let known = transfer.files.reduce(0) { $0 + $1.size }
      let all = UInt64(max(0, transfer.progress.totalBytes))
      totals.bytes += max(known, all)
      totals.streamed += all > known ? all - known : 0
    }
    // What arrived of a streamed file is gone with a broken transfer: nothing to resume.
    let resume =
      part.contains(where: \.isStreamed)
      ? "" : "; what arrived is kept: run the same send again to resume"
    if interrupted {
      return CLIFailure(status: .interrupted, message: "interrupted", code: .interrupted)
    }
    switch outcome {
    case .success(let results):
      for result in results {
        output.emit(FileDone(sent: result, to: label))
        switch result.status {
        case .stored: totals.stored += 1
        case .identical: totals.identical += 1
        default: break
        }
      }
      totals.files += results.count
      let folders = Set(part.filter(\.isFolder).map(\.path))
      totals.folders += results.count { folders.contains($0.path) }
      return nil
    case .failure(.transfer(.cancelled)) where Interrupts.wasInterrupted:
      // Ctrl-C: reported once, by the interrupt handler.
      return CLIFailure(status: .interrupted, message: "interrupted", code: .interrupted)
    case .failure(.transfer(.cancelledByPeer(let reason))):
      return report(
        peer,
        CLIFailure(
          status: .transferFailed,
          message: "\(peer) stopped the transfer (\(DisplayText.escaping(reason)))"
            + (resume.isEmpty
              ? "" : "; what it received is kept: run the same send again to resume"),
          code: .cancelled))
    case .failure(.invitation(let error)):
      return report(peer, Self.failure(error, label: label))
    case .failure(.transfer(let error)):
      return report(
        peer,
        CLIFailure(
          status: .transferFailed,
          message: "to \(peer.displayName): \(error)"
            + (RetryPolicy.isRetryable(error) ? resume : ""),
          code: .transferFailed))
    }
  }

  /// A failure for one receiver among several is reported now; the command's exit status
  /// combines them at the end.
  private func report(_ peer: PeerID, _ failure: CLIFailure) -> CLIFailure {
    output.emit(Failure(code: failure.code, message: failure.message, peer: peer.displayName))
    return failure
  }

  /// The CLI's view of an invitation error for `label`.
  static func failure(_ error: InvitationError, label: String) -> CLIFailure {
    switch error {
    case .declined:
      return CLIFailure(
        status: .declined, message: "\(label): \(error.description)", code: .declined)
    case .authenticationFailed:
      return CLIFailure(
        status: .authentication, message: "\(label): \(error.description)",
        code: .authentication)
    case .unreachable(let address, _) where address == label:
      // --address: the error already names the address; say it once.
      return CLIFailure(status: .noPeer, message: error.description, code: .noPeer)
    case .timedOut, .unreachable, .busy, .expired:
      return CLIFailure(
        status: .noPeer, message: "\(label): \(error.description)", code: .noPeer)
    default:
      return CLIFailure(
        status: .transferFailed, message: "\(label): \(error.description)",
        code: .invitationFailed)
    }
  }
}
