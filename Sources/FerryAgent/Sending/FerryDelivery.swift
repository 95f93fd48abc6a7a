import Ferry
import Foundation
import Synchronization

/// A batch (or a text) sent to Ferry receivers over one session: for each receiver, the
/// invitation, the key check, the transfer part by part with one progress total, retried as
/// its ``RetryPolicy`` says when the link drops, and what is reported about it
/// (``SendEvent``). Several receivers at once share it; each ends in an outcome of its own.
public struct FerryDelivery: Sendable {
  let session: Session
  /// The files (nil for a text).
  let batch: SendBatch?
  /// What the invitation announces.
  let summary: OfferSummary
  let events: @Sendable (SendEvent) -> Void
  let active: ActiveTransfers
  /// When finding and asking must be done by.
  public let deadline: ContinuousClock.Instant
  let keys: KeyCheck
  /// When a dropped link is tried again.
  let retry: RetryPolicy
  /// The digest each file is checked with.
  let checksum: ChecksumAlgorithm

  /// A delivery of `batch` (or, nil, the text `summary` carries) over `session`, to be asked
  /// for by `deadline`, retried as `retry` says; `decider` answers what only the person
  /// sending can; what happens goes to `events`.
  public init(
    session: Session, batch: SendBatch?, summary: OfferSummary, deadline: ContinuousClock.Instant,
    retry: RetryPolicy, checksum: ChecksumAlgorithm, knownPeers: KnownPeers,
    decider: any SendDecider, events: @escaping @Sendable (SendEvent) -> Void
  ) {
    self.session = session
    self.batch = batch
    self.summary = summary
    self.deadline = deadline
    self.retry = retry
    self.checksum = checksum
    self.events = events
    active = ActiveTransfers(session: session)
    keys = KeyCheck(knownPeers: knownPeers, decider: decider, events: events)
  }

  /// Stops every transfer on both ends and closes the session, at most 5 s (the receivers
  /// read the cancels before the connections close); what Ctrl-C says: whether a transfer
  /// was cut short (a re-run then resumes).
  public func interrupt() async -> String {
    await active.interrupt()
    return active.interruptMessage
  }

  /// The longest an invitation made again after a drop may take to be answered (less when
  /// `--retry-for` has less time left).
  static let reinviteTimeout: Duration = .seconds(30)

  /// How long a receiver found through discovery has to answer a TCP connect, at all its
  /// addresses at once, before it is invited.
  static let answerTimeout: Duration = .seconds(3)

  private var remaining: Duration { max(.milliseconds(100), deadline - .now) }

  /// Invites and sends to a receiver found through discovery; `pinned` when the user named
  /// its fingerprint. Nil when every file (or the text) was delivered.
  public func send(to target: DiscoveredPeer, browser: Browser, pinned: Bool = false) async
    -> SendFailure?
  {
    events(.found(target))
    // mDNS lists a receiver whose machine or link went until its records expire (minutes): a
    // receiver that answers at none of its addresses is given up on now, and one that answers
    // is invited at the addresses that did.
    let answering = await target.answeringAddresses(within: min(Self.answerTimeout, remaining))
    guard !answering.isEmpty else {
      let addresses = target.addresses.map { $0.hostPortString(port: target.port) }
        .joined(separator: ", ")
      let seconds = Self.answerTimeout.components.seconds
      return SendFailure(
        .noPeer,
        "\(printable(target.name)) is listed on the network but does not answer at "
          + "\(addresses) within \(seconds) s: it may be switched off or its network down "
          + "(mDNS lists it until its records expire)")
    }
    // Standard input sent as it is read needs version 5: said before anyone is asked there,
    // with nothing of it read yet.
    if let version = target.info.protocolVersion, version < 5,
      batch?.entries.contains(where: \.isStreamed) == true
    {
      return SendFailure(
        .usage,
        "\(printable(target.name)) runs an older Ferry (protocol \(version)), which cannot "
          + "take standard input as it is read: update it, or save standard input to a file and "
          + "send that")
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
    // Remembered for when discovery does not reach it: not a link-local address (an IPv6
    // one's zone names an interface of this machine, and neither crosses a router).
    let routable = answering.filter {
      !$0.ip.lowercased().hasPrefix("fe80:") && !$0.ip.hasPrefix("169.254.")
    }
    let addresses = routable.map { $0.hostPortString(port: target.port) }
    return await deliver(label: target.name, reachedAt: addresses) {
      () async throws(InvitationError) -> PeerID in
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

  /// Invites and sends to the receiver at `host`:`port` (`address` as the user gave it). `to`
  /// (the text the receiver was named by, and what it means) must match it: a key is pinned
  /// inside the TLS handshake, so a receiver with another key never sees the invitation; a
  /// name is checked once connected (and its key against what this machine knows, before any
  /// file). Nil when every file (or the text) was delivered.
  public func send(
    toAddress address: String, host: String, port: UInt16,
    to: (text: String, reference: PeerReference)?
  ) async -> SendFailure? {
    events(.connecting(address: address))
    let pinsKey = to?.reference.isKey ?? false
    // Shown as soon as the receiver is asked, before its answer: also when it declines, and
    // before any check of who it is (the code is what the user checks it with).
    let shown = codeShower(label: address, at: address)
    let reached = HostPort(host: host, port: port).description
    return await deliver(label: address, checkKey: !pinsKey, reachedAt: [reached]) {
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

  /// What reports an invitation's verification code the moment the receiver is asked (before
  /// it answers, whatever the answer). Each connection has a code of its own, so a
  /// reconnection reports its new one. `address`: the address the receiver was reached at.
  private func codeShower(label: String, at address: String?)
    -> @Sendable (PeerID, VerificationCode) -> Void
  {
    { [events] peer, code in
      events(.asked(label: label, peer: peer, address: address, code: code))
    }
  }

  /// Gets the invitation accepted, then sends the offer and reports it. `checkKey`: confirm a
  /// changed key (``KeyCheck``) once the peer is known, before sending. `reachedAt`: the
  /// addresses it was invited at, remembered once it accepted.
  private func deliver(
    label: String, checkKey: Bool = false, reachedAt: [String],
    invite: () async throws(InvitationError) -> PeerID,
    reconnect: @escaping @Sendable (Fingerprint, Duration) async throws(InvitationError) -> PeerID
  ) async -> SendFailure? {
    let peer: PeerID
    do {
      peer = try await invite()
    } catch {
      if case .declined(let reason) = error {
        events(.declined(label: label, reason: reason))
      }
      return SendFailure(error, label: label)
    }
    events(.accepted(peer, code: session.verificationCode(with: peer)))
    if checkKey, let refused = await keys.confirm(peer, pinned: false, timeout: remaining) {
      session.disconnect(peer)
      return refused
    }
    keys.remember(peer, reachedAt: reachedAt)
    if let text = summary.text {
      // The text travelled in the invitation; accepted is delivered.
      events(.textDelivered(peer, text: text, localSend: nil))
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
  ) async -> SendFailure? {
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
        events(.ended(label: label))
        return report(label, error)
      }
      let outcome = await send(part, to: target.withLock { $0 }, totals: &totals) {
        left async throws(InvitationError) -> PeerID in
        let again = try await reconnect(left)
        target.withLock { $0 = again }
        return again
      }
      if let failure = outcome {
        events(.ended(label: label))
        return failure
      }
    }
    events(.ended(label: label))
    events(
      .done(
        SendSummary(
          peer: peer, files: totals.files, folders: totals.folders,
          bytes: summary.bytes + totals.streamed, stored: totals.stored,
          identical: totals.identical, leftOut: 0, bytesSent: totals.sent,
          unreadable: parts.unreadable, took: ContinuousClock.now - started)))
    // Like rsync's exit 23: the rest was sent, but not everything asked for.
    guard parts.unreadable == 0 else {
      return SendFailure(
        .unreadable(parts.unreadable),
        "\(peer.displayName) got the rest, but not "
          + "\(Quantity.count(parts.unreadable, "unreadable path")) (left out above)")
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
  ) async -> SendFailure? {
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
            if attempt > 1 { events(.resumed(label: label, peer: peer, attempt: attempt)) }
            current = (
              transfer,
              Task { [summary, events] in
                for await snapshot in transfer.progress.snapshots {
                  events(
                    .progress(
                      label: label,
                      snapshot.within(files: before.files, bytes: before.bytes, of: summary)))
                }
              }
            )
          case .retrying(let attempt, let delay, let reason):
            if let (transfer, _) = current {
              current = nil
              sentEarlier += transfer.bytesSent
              active.remove(transfer)
            }
            events(
              .retrying(
                label: label, attempt: attempt, delay: delay, reason: reason, wholeFiles: false))
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
    if interrupted { return .interrupted }
    switch outcome {
    case .success(let results):
      for result in results {
        events(.file(label: label, result))
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
    case .failure(.transfer(.cancelled)) where active.isInterrupted:
      // Interrupted here: reported once, by whoever interrupted.
      return .interrupted
    case .failure(.transfer(.cancelledByPeer(let reason))):
      return report(
        label,
        SendFailure(
          .cancelled,
          "\(peer) stopped the transfer (\(DisplayText.escaping(reason)))"
            + (resume.isEmpty
              ? "" : "; what it received is kept: run the same send again to resume")))
    case .failure(.invitation(let error)):
      return report(label, SendFailure(error, label: label))
    case .failure(.transfer(let error)):
      return report(
        label,
        SendFailure(
          .transferFailed,
          "to \(peer.displayName): \(error)" + (RetryPolicy.isRetryable(error) ? resume : "")))
    }
  }

  /// A failure for one receiver among several is reported now; the send's result combines
  /// them at the end.
  private func report(_ label: String, _ failure: SendFailure) -> SendFailure {
    events(.failed(label: label, failure))
    return failure
  }
}
