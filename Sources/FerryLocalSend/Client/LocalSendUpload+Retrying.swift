import Ferry
import Foundation

/// What a retrying LocalSend send (``LocalSendUpload/send(_:to:pin:progress:retrying:events:)``)
/// reports as it goes, on its task.
public enum LocalSendSendEvent: Sendable {
  /// The device accepted a session of `files` files (each session a new question there).
  case accepted(files: Int)
  /// Attempt `attempt` failed (`reason`): the next comes after `delay`. `cutOff`: uploads were
  /// cut off mid-file, and what was not delivered goes again, whole.
  case retrying(attempt: Int, delay: Duration, reason: String, cutOff: Bool)
}

extension LocalSendUpload {
  /// The most sessions opened again in a row without a file delivered: each is a new question
  /// on a device that asks a person.
  public static let maximumSessionsWithoutProgress = 5

  /// Sends `items` to `target` as ``send(_:to:pin:progress:previous:onAccepted:)`` does, and
  /// when uploads are cut off or the device cannot be reached, tries again as `policy` says —
  /// the schedule a Ferry send follows (``RetryPolicy``): a new session offering only what was
  /// not delivered, whole (LocalSend cannot resume a file). Progress is a file delivered (one
  /// the device left out is not); `policy.retryFor` counts from the last, and at most
  /// ``maximumSessionsWithoutProgress`` sessions come in a row without one. Refusals (a
  /// decline, a PIN, a wrong certificate, a file it refused) are never retried; no answer in
  /// time and busy only after uploads were cut (the device may still be ending that session).
  ///
  /// - Returns: Each file with its last status.
  /// - Throws: ``LocalSendSendError``: the last failure, when nothing could be sent at all in
  ///   the last attempt; ``LocalSendSendError/cancelled`` when the task is cancelled.
  public func send(
    _ items: [(url: URL, path: String, size: UInt64)], to target: LocalSendTarget,
    pin: String? = nil, progress: TransferProgress, retrying policy: RetryPolicy,
    events: @escaping @Sendable (LocalSendSendEvent) -> Void = { _ in }
  ) async throws(LocalSendSendError) -> [LocalSendSentFile] {
    // Each file's SHA-256, once for every attempt.
    var results = try await Self.plan(items)
    var retries = RetryLoop(
      policy: policy, maximumWithoutProgress: Self.maximumSessionsWithoutProgress)
    var cuts = 0
    while true {
      _ = retries.begin()
      let delivered = Self.delivered(results)
      let reason: String
      let cutOff: Bool
      do throws(LocalSendSendError) {
        results = try await send(
          items, to: target, pin: pin, progress: progress, previous: results,
          onAccepted: { events(.accepted(files: $0)) })
        retries.record(Self.delivered(results) > delivered ? .progress : .none, at: .now)
        // Uploads cut off (status 0) go again whole, in a new session; what was delivered is
        // not offered again.
        let cut = results.filter { $0.status == 0 }
        guard !cut.isEmpty else { return results }
        cuts += 1
        (reason, cutOff) = (cut[0].reason ?? "the upload was cut off", true)
        guard !Task.isCancelled, let delay = retries.next(at: .now) else { return results }
        events(.retrying(attempt: retries.attempt, delay: delay, reason: reason, cutOff: cutOff))
        try await Self.wait(delay)
      } catch {
        guard Self.isTransient(error, afterCut: cuts > 0), !Task.isCancelled,
          let delay = retries.next(at: .now)
        else { throw error }
        events(
          .retrying(attempt: retries.attempt, delay: delay, reason: "\(error)", cutOff: false))
        try await Self.wait(delay)
      }
    }
  }

  /// Files delivered: stored at the device (a file it left out does not count).
  private static func delivered(_ results: [LocalSendSentFile]) -> Int {
    results.count { $0.status == 200 && !$0.skipped }
  }

  /// Waits `delay` before the next attempt.
  ///
  /// - Throws: ``LocalSendSendError/cancelled`` when the task is cancelled meanwhile.
  private static func wait(_ delay: Duration) async throws(LocalSendSendError) {
    do {
      try await Task.sleep(for: delay)
    } catch {
      throw .cancelled
    }
  }

  /// Whether `error` may pass while the policy's time lasts: the device out of reach or the
  /// connection cut — and, `afterCut` (uploads were cut off before), no answer in time or busy
  /// (it may still be ending the session that was cut). A refusal, a PIN or a wrong
  /// certificate is final.
  public static func isTransient(_ error: LocalSendSendError, afterCut: Bool) -> Bool {
    switch error {
    case .request(.unreachable), .request(.failed): return true
    case .request(.timedOut), .busy: return afterCut
    default: return false
    }
  }
}
