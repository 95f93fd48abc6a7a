/// What a retrying send counts as progress (``RetryPolicy/retryFor``): bytes this sender sent
/// that the receiver then confirmed holding — by resuming from them in a later attempt, or by
/// storing their file — at least ``minimumStep(total:)`` more than at the last progress. What a
/// receiver claims beyond the bytes sent to it (a resume offset one byte larger each time, a
/// file it says it stored but was never sent) counts for nothing, and since the bytes that can
/// be confirmed are bounded by the offer's size, progress is made at most 1 024 times.
package struct SendProgress {
  /// One file of one attempt, as the sender saw it.
  struct File: Sendable {
    /// The file's path in the offer.
    let path: String
    let size: UInt64
    /// Where the receiver said it holds the file from when it accepted the attempt; nil when it
    /// did not accept it, or left the file out.
    let offset: UInt64?
    /// Whether the receiver stored the file, or found it identical, in this attempt.
    let stored: Bool
    /// The bytes of the file this attempt sent; nil when none.
    let sent: Range<UInt64>?
    /// The receiver's verdict on the file in this attempt, if it gave one.
    var result: FileResult? = nil
  }

  /// What one failed attempt came to.
  package enum Verdict: Equatable, Sendable {
    /// More bytes this sender sent are confirmed than at the last progress, by at least a step.
    case progress
    /// At least a step of bytes this sender had never sent before went out, not confirmed yet:
    /// only the next attempt's offer can confirm them.
    case unconfirmed
    /// Neither.
    case none
    /// Nothing is known: the receiver did not accept the attempt.
    case unknown
  }

  /// Per file, by path: where this sender's bytes reach (contiguous from where the receiver
  /// first said it held the file), and how much of them the receiver confirmed.
  private var files: [String: (sent: UInt64, confirmed: UInt64)] = [:]
  /// Bytes confirmed at the last progress, counting what the receiver held before any byte
  /// was sent (an earlier run's staged bytes: neither sent here nor progress).
  private var best: UInt64 = 0

  /// The least progress that counts for an offer of `total` bytes: 1 MiB, or a 1 024th of the
  /// offer when that is more.
  static func minimumStep(total: UInt64) -> UInt64 {
    max(1 << 20, total / 1024)
  }

  /// Takes in one failed attempt, file by file.
  mutating func record(_ attempt: [File]) -> Verdict {
    guard attempt.contains(where: { $0.offset != nil }) else { return .unknown }
    var total: UInt64 = 0
    var grown: UInt64 = 0
    for file in attempt {
      total += file.size  // at most 2^62 in all: checked when the offer was made
      guard let offset = file.offset.map({ min($0, file.size) }) else { continue }
      let known = files[file.path] ?? (sent: offset, confirmed: offset)
      if files[file.path] == nil { best += offset }
      var sent = known.sent
      // Bytes sent from beyond where this sender's own reach (the receiver said it held more)
      // do not join them: what lies between was never sent.
      if let range = file.sent, range.lowerBound <= sent {
        sent = max(sent, min(range.upperBound, file.size))
      }
      let claimed = file.stored ? file.size : offset
      files[file.path] = (sent, max(known.confirmed, min(claimed, sent)))
      grown += sent - known.sent
    }
    let step = Self.minimumStep(total: total)
    let confirmed = files.values.reduce(UInt64(0)) { $0 + $1.confirmed }
    if confirmed >= best + step {
      best = confirmed
      return .progress
    }
    return grown >= step ? .unconfirmed : .none
  }
}
