/// The receiving side of one channel: what the peer may still send before more credit, and the
/// credit owed back as the application consumes (docs/PROTOCOL.md, "Flow control").
/// Event-loop confined.
final class InboundFlow {
  /// The channel's window: the credit the peer starts with.
  let window: Int
  /// The payload bytes the peer may still send.
  private(set) var allowance: Int
  /// Consumed bytes not yet granted back: credit goes out in batches of a quarter window.
  private var pendingGrant = 0
  /// Frames the peer may still send outside the window: an offer's FILE_ENDs, twice its file
  /// count in all (a held file that differs ends twice).
  private(set) var uncreditedFrames: Int

  init(window: Int, uncreditedFrames: Int = 0) {
    self.window = window
    self.allowance = window
    self.uncreditedFrames = uncreditedFrames
  }

  /// Takes one frame from ``uncreditedFrames``; false, changing nothing, when none is left
  /// (the peer sent more such frames than the protocol allows: its queue is not ours to grow).
  func consumeUncredited() -> Bool {
    guard uncreditedFrames > 0 else { return false }
    uncreditedFrames -= 1
    return true
  }

  /// Takes `size` bytes from the allowance; false, changing nothing, when the peer sent more
  /// than it was granted.
  func consume(_ size: Int) -> Bool {
    guard size <= allowance else { return false }
    allowance -= size
    return true
  }

  /// Records `bytes` consumed by the application; returns the credit to grant now (a quarter
  /// window or more has gathered), or nil to wait for more.
  func grant(_ bytes: Int) -> Int? {
    pendingGrant += bytes
    guard pendingGrant >= window / 4 else { return nil }
    defer { pendingGrant = 0 }
    allowance += pendingGrant
    return pendingGrant
  }
}
