import Testing

@testable import Ferry

/// The retry schedule, what is never retried (issue 11), and what counts as progress.
@Suite("RetryPolicy")
struct RetryPolicyTests {
  @Test("waits 1, 2, 4, 8, then 15 s; jitter stays within ±20 %")
  func schedule() {
    let policy = RetryPolicy()
    let middle = (1...7).map { policy.delay(beforeRetry: $0, random: 0.5) }
    #expect(middle == [1, 2, 4, 8, 15, 15, 15].map { Duration.seconds($0) })
    #expect(policy.delay(beforeRetry: 1, random: 0) == .milliseconds(800))
    #expect(policy.delay(beforeRetry: 1, random: 1) == .milliseconds(1200))
    #expect(policy.delay(beforeRetry: 5, random: 1) == .seconds(18))
    #expect(policy.delay(beforeRetry: 1_000_000, random: 0.5) == .seconds(15))
    #expect(policy.delay(beforeRetry: 0, random: 0.5) == .seconds(1))
    #expect(RetryPolicy(jitter: 7).jitter == 1)
  }

  @Test("a dropped, stalled or unreachable link is retried; refusals, cancels and bad keys never")
  func classification() {
    #expect(RetryPolicy.isRetryable(TransferError.peerDisconnected(reason: "reset")))
    #expect(RetryPolicy.isRetryable(TransferError.stalled(.seconds(60))))
    #expect(!RetryPolicy.isRetryable(TransferError.cancelled))
    #expect(!RetryPolicy.isRetryable(TransferError.cancelledByPeer(reason: "no")))
    #expect(
      !RetryPolicy.isRetryable(TransferError.resource(.insufficientSpace(needed: 2, available: 1))))
    #expect(RetryPolicy.isRetryable(InvitationError.unreachable(address: "a:1", reason: "refused")))
    #expect(RetryPolicy.isRetryable(InvitationError.timedOut))
    #expect(RetryPolicy.isRetryable(InvitationError.busy))
    #expect(!RetryPolicy.isRetryable(InvitationError.declined(reason: "")))
    #expect(!RetryPolicy.isRetryable(InvitationError.authenticationFailed(reason: "key")))
    #expect(!RetryPolicy.isRetryable(InvitationError.cancelled))
    #expect(!RetryPolicy.isRetryable(InvitationError.protocolVersionUnsupported(peerVersions: [9])))
    #expect(!RetryPolicy.isRetryable(InvitationError.closedByPeer(reason: "shutting down")))
    #expect(!RetryPolicy.isRetryable(InvitationError.protocolViolation(reason: "bad frame")))
    #expect(RetryPolicy.isRetryable(InvitationError.connectionFailed(reason: "reset")))
  }

  /// One file of `size` bytes, as one attempt saw it.
  func attempt(
    _ size: UInt64, offset: UInt64?, stored: Bool = false, sent: Range<UInt64>? = nil
  ) -> [SendProgress.File] {
    [SendProgress.File(path: "big.iso", size: size, offset: offset, stored: stored, sent: sent)]
  }

  @Test("a receiver that resumes one byte further each time, never sent, makes no progress")
  func fakedOffsets() {
    var progress = SendProgress()
    let size: UInt64 = 1 << 30
    // The first attempt sends 10 bytes from 0; then each claims one more byte than before.
    #expect(progress.record(attempt(size, offset: 0, sent: 0..<10)) == .none)
    for offset in UInt64(11)..<200 {
      #expect(
        progress.record(attempt(size, offset: offset, sent: offset..<offset + 1)) == .none,
        "offset \(offset)")
    }
    // Nor does a file it says it stored without having been sent it.
    #expect(progress.record(attempt(size, offset: 0, stored: true)) == .none)
  }

  @Test("bytes sent and then confirmed are progress, at least 1 MiB or a 1 024th of the offer")
  func confirmedBytes() {
    var progress = SendProgress()
    let size: UInt64 = 4 << 30  // a step of 4 MiB
    #expect(SendProgress.minimumStep(total: size) == 4 << 20)
    #expect(SendProgress.minimumStep(total: 10) == 1 << 20)
    // 64 MiB sent: only the next attempt's offer can confirm them.
    #expect(progress.record(attempt(size, offset: 0, sent: 0..<(64 << 20))) == .unconfirmed)
    // The next attempt resumes from them: progress.
    let resumed = attempt(size, offset: 64 << 20, sent: (64 << 20)..<(65 << 20))
    #expect(progress.record(resumed) == .progress)
    // 1 MiB more confirmed is less than a step.
    #expect(progress.record(attempt(size, offset: 65 << 20)) == .none)
    // The receiver lost what it staged: sending it again is nothing new, until it goes further.
    #expect(progress.record(attempt(size, offset: 0, sent: 0..<(60 << 20))) == .none)
    #expect(
      progress.record(attempt(size, offset: 60 << 20, sent: (60 << 20)..<size)) == .unconfirmed)
    #expect(progress.record(attempt(size, offset: 0, stored: true)) == .progress)
  }

  @Test("what the receiver held before anything was sent is where progress starts, not progress")
  func stagedBefore() {
    var progress = SendProgress()
    let size: UInt64 = 1 << 30
    #expect(progress.record(attempt(size, offset: 512 << 20)) == .none)
    let sent = attempt(size, offset: 512 << 20, sent: (512 << 20)..<(600 << 20))
    #expect(progress.record(sent) == .unconfirmed)
    #expect(progress.record(attempt(size, offset: 600 << 20)) == .progress)
    // An attempt that was never accepted tells nothing.
    #expect(progress.record([]) == .unknown)
    #expect(progress.record(attempt(size, offset: nil)) == .unknown)
  }
}
