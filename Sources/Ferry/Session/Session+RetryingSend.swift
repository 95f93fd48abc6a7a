extension Session {
  /// Sends files to `peer` as ``sendResources(_:to:)`` does, and when the link drops, stalls
  /// or cannot be made again, tries again: waits as `policy` says, calls `reconnect` for the
  /// peer (which must prove the same key: pin it), and offers the same files, which resume from
  /// what the receiver staged (and are not sent again where it already has them). Gives up
  /// when `policy.retryFor` passes without progress (bytes sent here that the receiver
  /// confirmed holding: ``RetryPolicy/retryFor``), after `policy.maximumAttempts`, or at once for
  /// what is never retried (a decline, an authentication failure, a cancel at either end, a
  /// refused offer, a file error, and an attempt that began to read a streamed item the
  /// receiver had not stored: ``ResourceError/streamInterrupted(path:)``; one it had stored is
  /// left out of the attempts after, and its verdict is among those returned).
  ///
  /// - Parameters:
  ///   - checksum: The digest each file is checked with (as for ``sendResources(_:to:checksum:)``).
  ///   - reconnect: Invites the receiver again; called before each retry with the time left
  ///     before the policy gives up (use it as, or to bound, the invitation's timeout).
  ///   - events: Told of each attempt's ``ResourceTransfer`` (for its progress) and of each
  ///     wait, on the calling task.
  /// - Returns: The final attempt's results, one per file.
  /// - Throws: ``RetriedSendError``: the last failure. Cancelling the task stops it (the
  ///   transfer under way is cancelled on both ends).
  public func sendResources(
    _ items: [ResourceItem], to peer: PeerID, checksum: ChecksumAlgorithm = .xxh3,
    retrying policy: RetryPolicy,
    reconnect: @Sendable (_ timeout: Duration) async throws(InvitationError) -> PeerID,
    events: (RetryEvent) -> Void = { _ in }
  ) async throws(RetriedSendError) -> [FileResult] {
    var target = peer
    var items = items
    // Verdicts of streamed items stored by an attempt that then failed: not sent again.
    var carried: [FileResult] = []
    var attempt = 0
    var progress = SendProgress()
    // The last progress (or the start), and what `policy.retryFor` counts from: that, or the
    // end of an attempt that sent new bytes, which only the next attempt's offer can confirm
    // (once: bytes the receiver never confirms do not keep the send going).
    var progressed = ContinuousClock.now
    var since = progressed
    while true {
      attempt += 1
      let failure: TransferError
      switch await attemptSend(
        items, to: target, checksum: checksum, attempt: attempt, events: events)
      {
      case .success(let results):
        return carried + results
      case .failure(let error, let delivery):
        switch progress.record(delivery) {
        case .progress: (progressed, since) = (.now, .now)
        case .unconfirmed where since == progressed: since = .now
        case .unconfirmed, .none: since = progressed
        case .unknown: break
        }
        // A link the peer (or this side, for a violation) closed on purpose is not lost.
        guard RetryPolicy.isRetryable(error), lastLinkEnd(of: target)?.isOnPurpose != true else {
          throw .transfer(error)
        }
        // A stream whose reading began cannot be read again: what was read is gone. One the
        // receiver stored is done; the rest goes on without it.
        for started in Self.startedStreams(items, delivery) {
          guard started.stored, let result = started.result else {
            throw .transfer(.resource(.streamInterrupted(path: started.path)))
          }
          carried.append(result)
          items.removeAll { $0.isStreamed && $0.path == started.path }
        }
        if items.isEmpty { return carried }
        failure = error
      }
      // Wait, then reconnect, until the policy's time without progress runs out.
      var last = RetriedSendError.transfer(failure)
      while true {
        let delay = policy.delay(beforeRetry: attempt)
        if Task.isCancelled { throw .transfer(.cancelled) }
        guard attempt < policy.maximumAttempts,
          ContinuousClock.now + delay - since <= policy.retryFor
        else { throw last }
        events(.retrying(attempt: attempt, delay: delay, reason: last.description))
        do {
          try await Task.sleep(for: delay)
        } catch {
          throw .transfer(.cancelled)
        }
        let again: PeerID
        do {
          let left = policy.retryFor - (ContinuousClock.now - since)
          again = try await reconnect(max(left, .milliseconds(500)))
        } catch {
          guard RetryPolicy.isRetryable(error) else { throw .invitation(error) }
          last = .invitation(error)
          attempt += 1
          continue
        }
        guard again.fingerprint == peer.fingerprint else {
          // Only the receiver the send began with: never another key.
          disconnect(again)
          throw .invitation(
            .authenticationFailed(reason: "reconnecting reached \(again), not \(peer)"))
        }
        if Task.isCancelled { throw .transfer(.cancelled) }
        target = again
        break
      }
    }
  }

  /// The streamed items of `items` that the failed attempt `delivery` began to read: none can
  /// be sent again.
  private static func startedStreams(_ items: [ResourceItem], _ delivery: [SendProgress.File])
    -> [SendProgress.File]
  {
    let streamed = Set(items.lazy.filter(\.isStreamed).map(\.path))
    guard !streamed.isEmpty else { return [] }
    return delivery.filter { streamed.contains($0.path) && $0.sent != nil }
  }

  /// One attempt: offers `items` to `target` and waits for the verdicts.
  private func attemptSend(
    _ items: [ResourceItem], to target: PeerID, checksum: ChecksumAlgorithm, attempt: Int,
    events: (RetryEvent) -> Void
  ) async -> AttemptOutcome {
    let transfer: ResourceTransfer
    do {
      transfer = try sendResources(items, to: target, checksum: checksum)
    } catch {
      return .failure(error, delivery: [])
    }
    events(.sending(transfer, attempt: attempt))
    let outcome = await withTaskCancellationHandler {
      () async -> Result<[FileResult], TransferError> in
      do throws(TransferError) {
        return .success(try await transfer.result())
      } catch {
        return .failure(error)
      }
    } onCancel: {
      transfer.cancel()
    }
    switch outcome {
    case .success(let results): return .success(results)
    case .failure(let error): return .failure(error, delivery: transfer.delivery)
    }
  }
}

/// How one attempt of a retrying send ended.
private enum AttemptOutcome {
  case success([FileResult])
  case failure(TransferError, delivery: [SendProgress.File])
}
