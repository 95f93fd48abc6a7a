/// Sending files again and again until they are through (``RetryingSend``).
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
    try await RetryingSend(session: self, peer: peer, checksum: checksum, policy: policy).run(
      items, reconnect: reconnect, events: events)
  }
}
