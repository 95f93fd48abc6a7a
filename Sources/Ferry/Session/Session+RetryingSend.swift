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
  /// - Returns: One result per file: the final attempt's, but for a file an earlier attempt
  ///   stored, whose verdict is that attempt's.
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
    // Verdicts of files stored (or found identical) by an attempt that then failed: the
    // receiver answers them "skipped" when they are offered again (settled under the same
    // consent, never written twice), and this is what became of them.
    var settledEarlier: [String: FileResult] = [:]
    var progress = SendProgress()
    var retries = RetryLoop(policy: policy)
    while true {
      let attempt = retries.begin()
      let failure: TransferError
      switch await attemptSend(
        items, to: target, checksum: checksum, attempt: attempt, events: events)
      {
      case .success(let results):
        return carried
          + results.map { result in
            guard result.status == .skipped, let earlier = settledEarlier[result.path] else {
              return result
            }
            return earlier
          }
      case .failure(let error, let delivery):
        retries.record(progress.record(delivery), at: .now)
        for file in delivery where file.stored {
          if let result = file.result { settledEarlier[file.path] = result }
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
        if Task.isCancelled { throw .transfer(.cancelled) }
        guard let delay = retries.next(at: .now) else { throw last }
        events(.retrying(attempt: retries.attempt, delay: delay, reason: last.description))
        do {
          try await Task.sleep(for: delay)
        } catch {
          throw .transfer(.cancelled)
        }
        let again: PeerID
        do {
          again = try await reconnect(retries.budget(at: .now))
        } catch {
          guard RetryPolicy.isRetryable(error) else { throw .invitation(error) }
          last = .invitation(error)
          _ = retries.begin()
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
