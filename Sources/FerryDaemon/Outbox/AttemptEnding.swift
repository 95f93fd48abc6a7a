import FerryAgent
import Foundation

/// How a delivery attempt of an outbox send ends, and how long the send then waits: the
/// courier's policy, apart from its tasks. Pure: any thread.
enum AttemptEnding {
  /// How an attempt of `entry` ends (`failure` nil: everything delivered): delivered, failed
  /// for good, cancelled, or queued again — and whether it counts. An attempt counts only if
  /// the receiver proved the key (`provedKey`: a Ferry receiver was asked or accepted, a
  /// LocalSend device accepted; or a LocalSend device declined or wanted a PIN, which ends the
  /// send anyway); one nobody proved it in is a miss, which only makes the next wait longer.
  /// `cancelled`: cancelled while under way; `stopping`: the daemon is stopping. False
  /// (nothing changed) unless `entry` is under way. Pure: any thread.
  static func endAttempt(
    _ entry: inout OutboxEntry, failure: SendFailure?, provedKey: Bool, cancelled: Bool,
    stopping: Bool, now: Date
  ) -> Bool {
    // Only an attempt under way ends here (an expiry or a cancel may have ended it first).
    guard case .delivering = entry.state else { return false }
    let wasCancelled = cancelled || entry.cancelRequested == true
    entry.bytes = entry.settledBytes
    // A LocalSend device's decline or PIN answer comes after its pinned handshake: proof
    // enough. (Not a busy answer: a prompt of an earlier attempt the person left open makes
    // it too, and it would use up the attempts of a send nobody refused.)
    let answered = failure.map { [.declined, .pin].contains($0.kind) } ?? false
    // Nobody proved the key: a spoofed announcement, a peer gone, no answer.
    let unproven = failure != nil && !provedKey && !answered
    // Cut off by the daemon stopping (a LocalSend upload cut off is `transferFailed`): not an
    // attempt the peer had. An answer that came meanwhile (declined, busy, …) still stands.
    let stopped =
      stopping && failure.map { passes($0.kind) && $0.kind != .busy } ?? false
    if !wasCancelled && (stopped || unproven) { entry.attempts = max(0, entry.attempts - 1) }
    if provedKey || answered { entry.misses = nil }
    // A browser's upload is read once: tried once, whatever stopped it.
    let once = entry.upload == true
    if wasCancelled && failure != nil {
      entry.state = .cancelled(at: now)
    } else if stopped && !once {
      // Resumed from what the peer staged at the next start.
      entry.state = .queued(retryAt: nil)
    } else if let failure {
      let problem = OutboxEntry.Problem(code: Self.code(failure.kind), message: failure.message)
      entry.lastProblem = problem
      if unproven { entry.misses = min((entry.misses ?? 0) + 1, Courier.maximumMisses) }
      if unproven && Self.passes(failure.kind) && entry.when == .now && !once {
        // A send for now waits out its window (``Outbox/nowWindow``) for the key's holder.
        entry.state = .queued(retryAt: now.addingTimeInterval(5))
      } else if Self.passes(failure.kind) && entry.attempts < Courier.maximumAttempts
        && entry.when == .seen && !once
      {
        // (A send for now is tried once: its peer was there, and did not take it.)
        let waited = entry.attempts + (entry.misses ?? 0)
        entry.state = .queued(retryAt: now.addingTimeInterval(Self.backoff(waited)))
      } else {
        entry.state = .failed(at: now, problem: problem)
      }
    } else {
      // Delivered (a cancel that came too late included): what changed or went away since it
      // was queued is in its files' verdicts (`changed`, `missing`) and its send-ended event,
      // not sent.
      entry.state = .delivered(at: now)
    }
    return true
  }

  /// Whether a failure of this kind may pass (the send waits for its peer again).
  static func passes(_ kind: SendFailure.Kind) -> Bool {
    switch kind {
    // A pin that failed: whoever answered was not the key's holder (anyone can advertise a
    // key); the holder may be seen later.
    case .noPeer, .transferFailed, .invitationFailed, .batchChanged, .busy, .interrupted,
      .authentication:
      true
    case .usage, .cannotRead, .invalidPath, .nothingToSend, .declined, .keyChanged, .cancelled,
      .unreadable, .pin, .integrity:
      false
    }
  }

  /// The wait before a send tried `attempts` times is tried again: 1, 2, 4 … minutes, at
  /// most an hour.
  static func backoff(_ attempts: Int) -> TimeInterval {
    min(3600, 60 * pow(2, Double(max(0, attempts - 1))))
  }

  /// The `--json` error code for a failure of this kind (as `ferry send` gives it).
  static func code(_ kind: SendFailure.Kind) -> String {
    switch kind {
    case .noPeer: "no-peer"
    case .usage: "usage"
    case .cannotRead: "cannot-read"
    case .invalidPath: "invalid-path"
    case .nothingToSend: "empty"
    case .batchChanged: "cannot-read"
    case .declined: "declined"
    case .authentication: "authentication"
    case .keyChanged: "key-changed"
    case .invitationFailed: "invitation-failed"
    case .transferFailed: "transfer-failed"
    case .cancelled: "cancelled"
    case .interrupted: "interrupted"
    case .unreadable: "unreadable"
    case .busy: "busy"
    case .pin: "pin"
    case .integrity: "integrity"
    }
  }
}
