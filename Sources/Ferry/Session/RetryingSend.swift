/// A send of files to one peer that tries again when the link drops, stalls or cannot be made
/// again, as ``Session/sendResources(_:to:checksum:retrying:reconnect:events:)`` says: each
/// attempt an offer of the session's (``Session/sendResources(_:to:checksum:)``), waits and
/// reconnections as `policy` says, and what the attempts delivered carried over to the next.
struct RetryingSend {
  let session: Session
  /// The receiver the send began with: a reconnection must reach the same key.
  let peer: PeerID
  let checksum: ChecksumAlgorithm
  let policy: RetryPolicy

  /// Sends `items`, trying again through `reconnect` (called with the time left before the
  /// policy gives up), telling `events` of each attempt and wait: one result per file.
  func run(
    _ items: [ResourceItem],
    reconnect: @Sendable (_ timeout: Duration) async throws(InvitationError) -> PeerID,
    events: (RetryEvent) -> Void
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
        guard RetryPolicy.isRetryable(error), session.lastLinkEnd(of: target)?.isOnPurpose != true
        else {
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
          session.disconnect(again)
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
      transfer = try session.sendResources(items, to: target, checksum: checksum)
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
