import Testing

@testable import Ferry

/// The retry schedule and what is never retried (issue 11).
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
}
