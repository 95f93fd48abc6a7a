/// What a retrying send (``Session/sendResources(_:to:retrying:reconnect:events:)``) reports
/// as it goes, in order.
public enum RetryEvent: Sendable {
  /// Attempt number `attempt` (1 for the first) is sending: follow its progress.
  case sending(ResourceTransfer, attempt: Int)
  /// Attempt number `attempt` failed, for `reason`, in a way worth retrying: the next one starts
  /// after `delay` (reconnecting first).
  case retrying(attempt: Int, delay: Duration, reason: String)
}
