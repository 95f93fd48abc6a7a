import CFerrySystem
import Crypto
internal import FerryWire
import Foundation
import NIOCore
import Synchronization

/// Sends one offer over a link: OFFER, then each file's chunks and FILE_END, pipelined with no
/// round trip per file, then waits for every FILE_ACK. The Ferry wire's sending front end: the
/// core's ``ResourceTransfer`` sees it as ``OfferSending``.
final class OutgoingOffer: OfferSending {
  let bytesSent = Atomic<UInt64>(0)
  /// Frames heard from the receiver on this offer: with ``bytesSent``, what shows progress.
  let framesHeard = Atomic<UInt64>(0)
  /// Bytes of resumed prefixes read and hashed here: work of this side's own, not a stall.
  let prefixRead = Atomic<UInt64>(0)
  /// Empty CHUNKs sent while a streamed file's writer was quiet: waiting for this side's own
  /// input, not a stall.
  let idleSent = Atomic<UInt64>(0)
  let stall: Duration
  let files: [TransferFile]
  let urls: [URL]
  let link: ConnectionLink
  let progress: TransferProgress
  let hashQueue = DispatchQueue(label: "ferry.outgoing-offer.digest")
  /// The digest asked for; the one used is the machine's once the offer is open.
  let requestedChecksum: ChecksumAlgorithm
  let state: Mutex<Locked>

  /// What changes as the offer goes: the protocol's state (``OutgoingOfferStateMachine``) and
  /// the tasks waiting on it. Answers arrive on the event loop, the sending task runs
  /// elsewhere: both under the lock.
  struct Locked {
    var machine: OutgoingOfferStateMachine
    var acceptWaiter: CheckedContinuation<[FileStart], any Error>?
    var doneWaiter: CheckedContinuation<[Int]?, any Error>?
    /// The streamed file being read, if one is: stopped when the offer fails.
    var source: StreamSource?
  }

  init(
    files: [TransferFile], urls: [URL], link: ConnectionLink, progress: TransferProgress,
    checksum: ChecksumAlgorithm = .xxh3, stall: Duration = ConnectionTimeouts().transferStall
  ) {
    self.requestedChecksum = checksum
    self.stall = stall
    self.files = files
    self.urls = urls
    self.link = link
    self.progress = progress
    self.state = Mutex(Locked(machine: OutgoingOfferStateMachine(files: files)))
  }

  func run() async throws -> [FileResult] {
    let (files, requested) = (self.files.map(\.wire), requestedChecksum.wire)
    let (channel, digest, holes) = try await link.withMultiplexer { [self] multiplexer in
      multiplexer.openOffer(files, digest: requested) { signal in
        switch signal {
        case .frame(let frame): self.answered(frame)
        case .linkClosed(let reason): self.fail(.peerDisconnected(reason: reason))
        }
      }
    }.get()
    let checksum = ChecksumAlgorithm(digest)
    let cancelledEarly = state.withLock {
      $0.machine.opened(channel: channel, checksum: checksum, holes: holes)
    }
    if cancelledEarly { cancel() }
    let watchdog = Task { await watchForStall(channel: channel) }
    defer { watchdog.cancel() }
    do {
      let starts = try await withCheckedThrowingContinuation { continuation in
        let ready = state.withLock { state -> Result<[FileStart], TransferError>? in
          if let failure = state.machine.failure { return .failure(failure) }
          if let starts = state.machine.starts { return .success(starts) }
          state.acceptWaiter = continuation
          return nil
        }
        if let ready { continuation.resume(with: ready) }
      }
      // Files left out have their verdict already (skipped).
      for (index, start) in starts.enumerated() where start == .skip {
        progress.complete(index)
      }
      var inFlight = InFlight()
      // Held files' digests first, so that the receiver can answer while the rest is sent.
      for (index, start) in starts.enumerated() where start == .held {
        try await sendDigest(index, channel: channel, inFlight: &inFlight)
      }
      for (index, start) in starts.enumerated() {
        guard case .from(let offset) = start else { continue }
        try await send(index, from: offset, channel: channel, inFlight: &inFlight)
      }
      try await inFlight.drain(link: link, channel: channel)
      // Then every held file the receiver has other content for, whole, until all are answered.
      while let resend = try await nextResend() {
        for index in resend {
          try await send(index, from: 0, channel: channel, inFlight: &inFlight)
        }
        try await inFlight.drain(link: link, channel: channel)
      }
    } catch {
      // The first failure recorded (a cancel, the peer's RESET) is the cause; what the send
      // loop hit afterwards (a channel already closed) is only its echo.
      let transferError =
        state.withLock { $0.machine.failure } ?? (error as? TransferError)
        ?? .peerDisconnected(reason: ErrorWords.describe(error))
      abandon(channel: channel, transferError)
      progress.finish()
      throw transferError
    }
    link.onMultiplexer { $0.closeOffer(channel: channel) }
    progress.finish()
    return state.withLock { $0.machine.slots.compactMap(\.result) }
  }

  /// File bytes sent so far (``OfferSending``).
  var bytesSentSoFar: UInt64 { bytesSent.load(ordering: .relaxed) }

  /// What this attempt came to, file by file, for a retrying send's idea of progress
  /// (``SendProgress``): where the receiver said each file starts (a held file: 0), whether it
  /// stored it (or found it identical), and which of its bytes were sent.
  var delivery: [SendProgress.File] {
    state.withLock { state in
      state.machine.slots.map { slot in
        let status = slot.result?.status
        let offset: UInt64?
        switch slot.start {
        case .from(let resumed)?: offset = resumed
        case .held?: offset = 0
        case .skip?, nil: offset = nil
        }
        return SendProgress.File(
          path: slot.file.path, size: slot.file.size, offset: offset,
          stored: status == .stored || status == .identical, sent: slot.sent, result: slot.result)
      }
    }
  }

  func cancel() {
    let channel = state.withLock { $0.machine.cancel() }
    guard let channel else { return }
    fail(.cancelled)
    abandon(channel: channel, .cancelled)
  }

  /// Reads, hashes and sends file `index` from `offset` (hashing the bytes before it too).
  /// Frames are queued without waiting for each: up to ``InFlight/limit`` batches are in
  /// flight, and a file's last CHUNK travels with its FILE_END, so a small file costs one hop.
  /// Waits until every file is answered (nil) or the receiver asks for held files whole (them).
  private func nextResend() async throws -> [Int]? {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<[Int]?, any Error>) in
      let ready = state.withLock { state -> Result<[Int]?, TransferError>? in
        switch state.machine.next() {
        case .failed(let failure): return .failure(failure)
        case .resend(let files): return .success(files)
        case .done: return .success(nil)
        case .wait:
          state.doneWaiter = continuation
          return nil
        }
      }
      if let ready { continuation.resume(with: ready) }
    }
  }

  /// Fails the offer when the receiver shows no progress — no credit taken up by new data, no
  /// answer, no acknowledgement (and this side is not busy reading a resumed prefix or a held
  /// file) — for ``ConnectionTimeouts/transferStall`` (and, before its answer, for
  /// ``ResourceOffer/decisionTimeout`` more): a receiver that keeps its link alive and does
  /// nothing would otherwise hold this send for ever. While held files wait for their answer,
  /// it waits as long again as this side took to hash them (the receiver hashes its own copies
  /// too): bounded by this side's own work, never by what the receiver claims. Ends when
  /// cancelled.
  private func watchForStall(channel: UInt32) async {
    func mark() -> UInt64 {
      bytesSent.load(ordering: .relaxed) &+ framesHeard.load(ordering: .relaxed)
        &+ prefixRead.load(ordering: .relaxed) &+ idleSent.load(ordering: .relaxed)
    }
    var seen = mark()
    var since = ContinuousClock.now
    while (try? await Task.sleep(for: stall / 4)) != nil {
      let now = mark()
      guard now == seen else {
        (seen, since) = (now, .now)
        continue
      }
      let limit = state.withLock {
        $0.machine.patience(stall: stall, decision: ResourceOffer.decisionTimeout)
      }
      if ContinuousClock.now - since >= limit {
        fail(.stalled(limit))
        abandon(channel: channel, .stalled(limit))
        return
      }
    }
  }

  /// A frame from the receiver (on the loop).
  private func answered(_ frame: WireFrame) {
    framesHeard.add(1, ordering: .relaxed)
    switch frame.type {
    case .offerAccept:
      guard case .offerAccept(_, let offsets, let held)? = try? ResourceMessage(frame: frame.flat)
      else { return violation("the receiver answered the offer wrongly") }
      let starts = FileStart.starts(offsets: offsets, held: held)
      let (answer, waiter) = state.withLock {
        state -> (
          Result<[FileStart], OutgoingOfferStateMachine.Violation>?,
          CheckedContinuation<[FileStart], any Error>?
        ) in
        let answer = state.machine.accepted(starts)
        guard case .success = answer else { return (answer, nil) }
        defer { state.acceptWaiter = nil }
        return (answer, state.acceptWaiter)
      }
      switch answer {
      case .failure(let violation)?: return self.violation(violation.reason)
      case .success(let starts)?: waiter?.resume(returning: starts)
      case nil: return
      }
    case .fileAck:
      guard
        case .fileAck(_, let file, let status, let reason)? = try? ResourceMessage(
          frame: frame.flat),
        Int(file) < files.count
      else { return violation("the receiver acknowledged a file wrongly") }
      let (acknowledgement, wake) = state.withLock {
        state -> (
          OutgoingOfferStateMachine.Acknowledgement?,
          (CheckedContinuation<[Int]?, any Error>, [Int]?)?
        ) in
        let acknowledgement = state.machine.acknowledged(
          Int(file), FileVerdict(status), reason: reason)
        // The sending task waits for every verdict, or for files asked for whole.
        guard let waiter = state.doneWaiter else { return (acknowledgement, nil) }
        switch state.machine.next() {
        case .resend(let files):
          state.doneWaiter = nil
          return (acknowledgement, (waiter, files))
        case .done:
          state.doneWaiter = nil
          return (acknowledgement, (waiter, nil))
        case .wait, .failed:
          return (acknowledgement, nil)
        }
      }
      switch acknowledgement {
      case .violation(let reason)?: return violation(reason)
      case .verdict(let index)?: progress.complete(index)
      case .askedWhole?, nil: break
      }
      if let (waiter, resend) = wake { waiter.resume(returning: resend) }
    case .reset:
      var reason = ""
      if case .reset(_, _, let text)? = try? TransferMessage(frame: frame.flat) { reason = text }
      fail(.cancelledByPeer(reason: reason))
    default:
      break
    }
  }

  /// The receiver broke the offer's protocol: the transfer fails and the link closes (GOODBYE
  /// with `reason`), as for any other protocol violation.
  /// On the event loop (answers arrive there).
  private func violation(_ reason: String) {
    // The GOODBYE first, in this turn: failing wakes the application, whose own close (or
    // retry decision) must come after it.
    link.handlerOnLoop.closeForViolation(reason)
    fail(.peerDisconnected(reason: reason))
  }

  private func fail(_ error: TransferError) {
    let (first, accept, done, source) = state.withLock { state in
      let first = state.machine.fail(error)
      defer {
        state.acceptWaiter = nil
        state.doneWaiter = nil
      }
      return (first, state.acceptWaiter, state.doneWaiter, state.source)
    }
    source?.stop()
    if first {
      let remote = link.channel.remoteAddress?.description ?? "?"
      FerryLogging.logger.info(
        "sending \(Quantity.count(files.count, "file")) to \(remote) stopped: \(error)")
    }
    accept?.resume(throwing: error)
    done?.resume(throwing: error)
  }

  private func abandon(channel: UInt32, _ error: TransferError) {
    switch error {
    case .cancelledByPeer, .peerDisconnected:
      link.onMultiplexer { $0.closeOffer(channel: channel) }
    default:
      let code = TransferMessage.ResetCode(.stopped(error))
      let reason = state.withLock { $0.machine.reasonForPeer } ?? Self.reasonForPeer(error)
      link.onMultiplexer {
        $0.answerOffer(TransferMessage.reset(channel: channel, code, reason: reason).frame)
        $0.closeOffer(channel: channel)
      }
    }
  }
}

extension OutgoingOffer {
  /// What the receiver is told about `error`, without anything local (paths) in it.
  static func reasonForPeer(_ error: TransferError) -> String {
    switch error {
    case .cancelled: return "the sender cancelled the transfer"
    case .resource(.cannotRead): return "the sender could not read a file"
    case .stalled(let duration):
      return "the sender saw no progress for \(duration.components.seconds) s"
    default: return "the sender failed"
    }
  }
}
