/// How ``Session/send(_:to:mode:)`` treats a busy link.
public enum SendMode: Hashable, Sendable {
  /// Ordered and delivered to the peer's connection, waiting for flow-control credit if the
  /// peer is slow; fails only if the peer disconnects.
  case reliable
  /// Best effort: dropped at once, never waiting, when the peer's credit is used up or the
  /// connection's send buffer is full.
  case unreliable
}
