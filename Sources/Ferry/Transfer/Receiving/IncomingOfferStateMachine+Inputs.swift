import Foundation

/// What a front end and the driver hand the machine: how the offer is answered, what the
/// application decided, what the disk holds, how a file landed, and the configuration.
extension IncomingOfferStateMachine {
  /// How an offer gets its answer.
  enum Reception: Sendable {
    /// Accepted into these options as soon as its paths are checked.
    case automatic(ReceiveOptions)
    /// Asked about (``IncomingOfferAction/ask``).
    case asking
  }

  /// What the application answered.
  enum Decision: Sendable {
    case accept(ReceiveOptions)
    case decline(String)
  }

  /// What the driver found on disk for a file (``IncomingOfferAction/survey(_:)``).
  struct FileFacts: Hashable, Sendable {
    /// Where the destination holds this sender's copy with the offered size and time, if it
    /// does.
    var heldCopy: RelativePath?
    /// Whether the name holds a regular file this sender placed.
    var placedBySender = false
    /// Bytes staged by an earlier attempt.
    var staged: UInt64 = 0
  }

  /// How a file's landing came out (``landed(_:_:into:)``).
  enum Landing: Sendable {
    /// Its size or bytes do not match what the sender announced: its staged file goes.
    case corrupt
    /// It could not be settled (a system call failed, `reason`): its staged file goes.
    case failed(String)
    /// Settled — complete, checked, closed — and then placed (or not) as `placement` says;
    /// `digest` is the digest of its bytes (nil for an empty folder).
    case settled(Placement, digest: [UInt8]?)
  }

  /// How a settled file's (or an empty folder's) placing came out.
  enum Placement: Sendable {
    /// It is at this URL (placed, handed over, or the folder created).
    case placed(URL)
    /// Left where it was: the skip policy found its name taken; `ownedBySender`: by a file
    /// this sender placed (only then is the sender told "skipped").
    case skipped(ownedBySender: Bool)
    /// It could not be placed.
    case failed(ResourceError)
  }

  /// What a front end configures.
  struct Configuration: Sendable {
    /// The sender (its fingerprint names its staged and placed files).
    let sender: PeerID
    /// The digest every file is checked with.
    let checksum: ChecksumAlgorithm
    /// Whether the sender speaks held files (protocol version 2 or later).
    let holdsFiles: Bool
    /// The most files whose bytes may arrive at once: the Ferry wire sends one at a time (a
    /// second one before the first ended is a violation).
    let openFiles: Int
    /// The files that may be held, when not every one may (a LocalSend sender's with a
    /// SHA-256: only those have a digest to compare); nil: every one.
    var holdable: Set<Int>? = nil
    /// How long the sender may make no progress.
    let stall: Duration
    /// The digest of no bytes: an empty folder's FILE_END carries it.
    let emptyDigest: [UInt8]
    /// Whether each verdict goes to the sender at once rather than gathered (a front end whose
    /// sender waits for each file's answer before its next request).
    var acknowledgesAtOnce = false
  }
}
